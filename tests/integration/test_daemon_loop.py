"""The daemon's loop and service: ticks scheduled together, periodic tasks, a clean stop."""

from __future__ import annotations

import asyncio
import itertools
import time
from collections.abc import Callable

import pytest
from sqlalchemy import func, select

from backfiller.daemon import Daemon, DaemonSettings
from backfiller.daemon.loop import Loop
from backfiller.definitions.loading import Definitions
from backfiller.domain import BackfillState
from backfiller.launchers import InlineLauncher
from backfiller.storage import Database
from backfiller.storage.records import BackfillRecord, DaemonLeaseRecord
from tests.defs.jobs_daemon import definitions as daemon_definitions
from tests.support import GraphQLRunner, launch


@pytest.fixture
def definitions() -> Definitions:
    return daemon_definitions


async def run_until(loop: Loop, done: Callable[[], bool], limit: float = 10) -> None:
    stop = asyncio.Event()
    runner = asyncio.create_task(loop.run(stop))
    deadline = time.monotonic() + limit
    while not done() and time.monotonic() < deadline:  # noqa: ASYNC110 (polls a condition)
        await asyncio.sleep(0.01)
    stop.set()
    await runner


async def test_a_periodic_task_is_one_line_and_runs_on_its_interval() -> None:
    loop = Loop(idle_seconds=0.01)
    calls: list[float] = []

    async def tick() -> None:
        calls.append(time.monotonic())

    loop.every(0.05, "tick", tick)
    await run_until(loop, lambda: len(calls) >= 4)
    assert len(calls) >= 4
    gaps = [b - a for a, b in itertools.pairwise(calls)]
    # The loop reads its clock just before it calls the task, which reads its own: a loaded
    # machine may preempt the process in between (a 45 ms gap was seen), so 10 ms of slack.
    assert min(gaps) >= 0.04, "never sooner than its interval"


async def test_a_failing_task_backs_off_and_the_others_keep_running() -> None:
    loop = Loop(idle_seconds=0.01)
    broken_at: list[float] = []
    fine_at: list[float] = []

    async def broken() -> None:
        broken_at.append(time.monotonic())
        raise RuntimeError("boom")

    async def fine() -> None:
        fine_at.append(time.monotonic())

    loop.every(0, "broken", broken)
    loop.every(0.02, "fine", fine)
    await run_until(loop, lambda: len(broken_at) >= 2)
    assert len(broken_at) == 2
    assert broken_at[1] - broken_at[0] >= 1.0, "retried after a back-off of 1 s"
    assert len([t for t in fine_at if broken_at[0] < t < broken_at[1]]) >= 3


async def test_the_daemon_runs_a_backfill_to_the_end_and_stops_cleanly(
    gql: GraphQLRunner, database: Database, definitions: Definitions
) -> None:
    backfill_id = await launch(gql, "flaky", "2024-01-01", "2024-01-20")
    daemon = Daemon(
        database,
        definitions,
        InlineLauncher(definitions),
        DaemonSettings(plan_seconds=0.01, steer_seconds=0.01, heartbeat_seconds=0.05),
    )
    seen: list[int] = []

    async def watch() -> None:
        async with database.read() as session:
            record = await session.get(BackfillRecord, int(backfill_id[3:]), populate_existing=True)
        assert record is not None
        seen.append(record.succeeded)
        if record.status is BackfillState.COMPLETED_SUCCESS:
            stop.set()

    daemon.loop.every(0.02, "watch", watch)
    stop = asyncio.Event()
    await asyncio.wait_for(daemon.run(stop), timeout=60)
    assert seen[-1] == 20
    assert daemon.totals.succeeded == 20 and daemon.totals.retried == 10
    async with database.read() as session:
        leases = (
            await session.execute(select(func.count()).select_from(DaemonLeaseRecord))
        ).scalar_one()
    assert leases == 0, "a stopped daemon drops its lease"
