"""The daemon's loop and service: ticks scheduled together, periodic tasks, a clean stop."""

from __future__ import annotations

import asyncio

import pytest
from sqlalchemy import func, select

from backfiller.daemon import Daemon, DaemonSettings
from backfiller.daemon.loop import Loop
from backfiller.definitions.loading import Definitions
from backfiller.domain import BackfillState
from backfiller.launchers import InlineLauncher
from backfiller.storage import Database
from backfiller.storage.records import BackfillRecord, DaemonLeaseRecord
from tests.acceptance.jobs_daemon import definitions as daemon_definitions
from tests.integration.test_daemon_ticks import launch
from tests.support import GraphQLRunner


@pytest.fixture
def definitions() -> Definitions:
    return daemon_definitions


async def test_a_periodic_task_is_one_line_and_runs_on_its_interval() -> None:
    loop = Loop(idle_seconds=0.01)
    calls: list[str] = []

    async def tick() -> None:
        calls.append("tick")

    loop.every(0.05, "tick", tick)
    stop = asyncio.Event()
    runner = asyncio.create_task(loop.run(stop))
    await asyncio.sleep(0.3)
    stop.set()
    await runner
    assert 3 <= len(calls) <= 8


async def test_a_failing_task_backs_off_and_the_others_keep_running() -> None:
    loop = Loop(idle_seconds=0.01)
    calls: list[str] = []

    async def broken() -> None:
        calls.append("broken")
        raise RuntimeError("boom")

    async def fine() -> None:
        calls.append("fine")

    loop.every(0, "broken", broken)
    loop.every(0.02, "fine", fine)
    stop = asyncio.Event()
    runner = asyncio.create_task(loop.run(stop))
    await asyncio.sleep(0.3)
    stop.set()
    await runner
    assert calls.count("broken") == 1, "retried only after its back-off (1 s)"
    assert calls.count("fine") >= 3


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
