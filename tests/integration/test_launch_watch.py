"""The launch watch: a daemon hears of a launch at once (PostgreSQL's notification, SQLite's
newest id) and plans it without waiting for its planning interval."""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator, Callable

import pytest

from backfiller.daemon import Daemon, DaemonSettings
from backfiller.definitions.loading import Definitions
from backfiller.domain import BackfillState
from backfiller.launchers import InlineLauncher
from backfiller.storage import Database
from backfiller.storage.launch_watch import watch_launches
from backfiller.storage.records import BackfillRecord
from tests.defs.jobs_daemon import definitions as daemon_definitions
from tests.support import GraphQLRunner, launch

WAIT_SECONDS = 10.0
PAUSE = "mutation($id: ID!) { pauseBackfill(input: {id: $id}) { userErrors { code } } }"


@pytest.fixture
def definitions() -> Definitions:
    return daemon_definitions


async def eventually(done: Callable[[], bool]) -> None:
    deadline = time.monotonic() + WAIT_SECONDS
    while not done() and time.monotonic() < deadline:  # noqa: ASYNC110 (polls a condition)
        await asyncio.sleep(0.01)


@contextlib.asynccontextmanager
async def watching(database: Database) -> AsyncIterator[list[float]]:
    """The times at which the watch reported a launch, while it runs."""
    heard: list[float] = []
    task = asyncio.create_task(watch_launches(database, lambda: heard.append(time.monotonic())))
    try:
        await asyncio.sleep(0.3)  # listening, or the newest id read once
        yield heard
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task


async def test_a_launch_is_heard_and_nothing_else_is(
    gql: GraphQLRunner, database: Database
) -> None:
    async with watching(database) as heard:
        await asyncio.sleep(0.2)
        assert heard == [], "no launch, nothing heard"
        first = await launch(gql, "noop", "2024-01-01", "2024-01-03")
        await eventually(lambda: len(heard) >= 1)
        assert len(heard) == 1, "the first launch of an empty database is heard"
        # A write that is not a launch (a pause) wakes nobody.
        paused = await gql(PAUSE, {"id": first})
        assert paused["pauseBackfill"]["userErrors"] == []
        await asyncio.sleep(0.2)
        assert len(heard) == 1
        await launch(gql, "noop", "2024-01-04", "2024-01-05")
        await eventually(lambda: len(heard) >= 2)
        assert len(heard) == 2


async def test_the_daemon_plans_a_launch_without_waiting_for_its_interval(
    gql: GraphQLRunner, database: Database, definitions: Definitions
) -> None:
    # Planning once an hour: only the launch watch can get this backfill started in time.
    daemon = Daemon(
        database,
        definitions,
        InlineLauncher(definitions),
        DaemonSettings(plan_seconds=3600, steer_seconds=0.01, heartbeat_seconds=0.05),
    )
    stop = asyncio.Event()
    running = asyncio.create_task(daemon.run(stop))
    try:
        await asyncio.sleep(0.5)  # its first planning pass is over: the next is in an hour
        backfill_id = await launch(gql, "noop", "2024-01-01", "2024-01-03")
        pk = int(backfill_id[3:])
        status: list[BackfillState] = []

        async def read_status() -> None:
            async with database.read() as session:
                record = await session.get(BackfillRecord, pk, populate_existing=True)
            assert record is not None
            status.append(record.status)

        deadline = time.monotonic() + WAIT_SECONDS
        while time.monotonic() < deadline:
            await read_status()
            if status[-1] is BackfillState.COMPLETED_SUCCESS:
                break
            await asyncio.sleep(0.05)
        assert status[-1] is BackfillState.COMPLETED_SUCCESS, status[-1]
        assert daemon.totals.succeeded == 3
    finally:
        stop.set()
        await asyncio.wait_for(running, timeout=30)
