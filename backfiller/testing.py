"""Test your jobs, assets and triggers in your own test suite, without a server or a daemon.

What a test needs: a backend on a temporary SQLite file, migrated like a real one
(:func:`temporary_backend`); a clock the test moves by hand (:class:`FrozenClock`); a launcher
that runs jobs in the test's own process (:class:`InlineLauncher`); and :func:`run_backfill`,
which launches a :class:`~backfiller.BackfillRequest` (what a trigger returns) exactly as the
API would (the same validation, the same stored backfill), runs the daemon's ticks until the
backfill has finished, and returns how it ended with its runs. Nothing of it is a mock: the
database, the launch service and the daemon's ticks are the ones the server runs.

A test with pytest (``asyncio_mode = "auto"``, pytest-asyncio)::

    from backfiller import BackfillRequest, PartitionRange
    from backfiller.testing import run_backfill, temporary_backend
    from my_project.jobs import definitions

    async def test_a_week_of_sales_runs() -> None:
        async with temporary_backend(definitions) as backend:
            week = PartitionRange("2026-01-01", "2026-01-07")
            done = await run_backfill(
                backend, BackfillRequest(job="daily_sales", partitions=week)
            )
        assert done.status is BackfillStatus.COMPLETED_SUCCESS
        assert [run.partition_key for run in done.runs] == [...]

``backfiller/examples/test_quickstart.py`` is such a test, run by the project's CI.
"""

from __future__ import annotations

import asyncio
import tempfile
import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path

from backfiller.clock import utc_now
from backfiller.config import Settings
from backfiller.daemon.report import TickReport
from backfiller.daemon.state import DaemonState
from backfiller.daemon.ticks import (
    complete_backfills,
    launch_runs,
    plan_backfills,
    record_results,
    steer_backfills,
)
from backfiller.definitions.loading import Definitions
from backfiller.ids import backfill_id
from backfiller.launchers.inline import InlineLauncher
from backfiller.services.backend import Backend
from backfiller.services.launch_types import LaunchProblem
from backfiller.services.launching import Launched, create_backfill, validate_launch
from backfiller.services.trigger_evaluation import launch_request_of
from backfiller.storage import Database
from backfiller.storage.migrations import upgrade_database
from backfiller.storage.records import BackfillRecord, RunRecord
from backfiller.storage.repositories import BackfillRepository, RunReads
from backfiller_client import BackfillStatus, RunStatus
from backfiller_client.requests import BackfillRequest

PAGE = 1_000


@dataclass
class FrozenClock:
    """A clock that stands still until the test moves it (``advance(hours=1)``). Give it to
    :func:`temporary_backend` as the backend's clock. Times must be aware (UTC)."""

    now: datetime

    def __call__(self) -> datetime:
        return self.now

    def advance(self, **kwargs: float) -> None:
        """Move the clock forward by ``timedelta(**kwargs)``."""
        self.now += timedelta(**kwargs)


@asynccontextmanager
async def temporary_backend(
    definitions: Definitions,
    *,
    clock: Callable[[], datetime] = utc_now,
    settings: Settings | None = None,
) -> AsyncIterator[Backend]:
    """A backend of ``definitions`` on a new SQLite file, migrated to this release's schema,
    deleted when the block ends."""
    with tempfile.TemporaryDirectory(prefix="backfiller-test-") as folder:
        url = f"sqlite:///{Path(folder) / 'backfiller.db'}"
        await asyncio.to_thread(upgrade_database, url)
        database = Database(url)
        try:
            yield Backend(database, definitions, settings or Settings(), clock)
        finally:
            await database.dispose()


class LaunchRefused(Exception):
    """The request was refused as the API would refuse it; ``problems`` say why."""

    def __init__(self, problems: list[LaunchProblem]) -> None:
        super().__init__("; ".join(f"{p.code.value}: {p.message}" for p in problems))
        self.problems = problems


@dataclass(frozen=True, slots=True)
class FinishedRun:
    """One run of a finished backfill (one attempt of one partition, or of a range of them)."""

    job: str
    partition_key: str
    """The partition (a ranged run's first partition)."""
    attempt: int
    status: RunStatus
    error_message: str | None


@dataclass(frozen=True, slots=True)
class FinishedBackfill:
    id: str
    """The backfill's public id (``bf_...``)."""
    status: BackfillStatus
    error: str | None
    runs: list[FinishedRun]
    """Every run, in the order they were queued."""


async def run_backfill(
    backend: Backend,
    request: BackfillRequest,
    *,
    launcher: InlineLauncher | None = None,
    creator: str | None = "test",
    within: float = 60.0,
) -> FinishedBackfill:
    """Launch ``request`` as the API would, run the daemon's ticks with ``launcher`` (an
    :class:`InlineLauncher` of the backend's definitions by default) until the backfill has
    finished, and return how it ended.

    Raises:
        LaunchRefused: the request is invalid (the problems the API would answer).
        TimeoutError: the backfill has not finished after ``within`` seconds (a job waiting
            for a retry's delay with a frozen clock never does: move the clock).
    """
    plan = await validate_launch(backend, launch_request_of(request), creator=creator)
    if isinstance(plan, list):
        raise LaunchRefused(plan)
    launched = await create_backfill(backend, plan.new)
    if not isinstance(launched, Launched):
        raise LaunchRefused([launched])
    record = await _until_finished(
        backend, launched.record.id, launcher or InlineLauncher(backend.definitions), within
    )
    return FinishedBackfill(
        id=backfill_id(record.id),
        status=BackfillStatus(record.status.value.upper()),
        error=record.error,
        runs=[_finished_run(r) for r in await _runs_of(backend.database, record.id)],
    )


async def _until_finished(
    backend: Backend, pk: int, launcher: InlineLauncher, within: float
) -> BackfillRecord:
    database, definitions, clock = backend.database, backend.definitions, backend.clock
    state = DaemonState()
    deadline = time.monotonic() + within
    while True:
        report = TickReport()
        report += await plan_backfills(database, definitions, clock, state)
        report += await launch_runs(database, definitions, clock, launcher, state)
        report += await record_results(database, definitions, clock, launcher, state)
        report += await steer_backfills(database, clock, launcher, state)
        report += await complete_backfills(database, clock)
        async with database.read() as session:
            record = await BackfillRepository(session).get(pk)
        assert record is not None
        if record.status.is_terminal:
            return record
        if time.monotonic() > deadline:
            raise TimeoutError(f"backfill {backfill_id(pk)} is still {record.status.value}")
        if not report.busy:
            state.forget_backfills()
            await asyncio.sleep(0.01)  # a retry's delay, on a clock that moves


async def _runs_of(database: Database, pk: int) -> list[RunRecord]:
    found: list[RunRecord] = []
    before: int | None = None
    while True:
        async with database.read() as session:
            page = await RunReads(session).page(PAGE, before, backfill_id=pk)
        found += page
        if len(page) < PAGE:
            return found[::-1]
        before = page[-1].id


def _finished_run(record: RunRecord) -> FinishedRun:
    return FinishedRun(
        job=record.job_name,
        partition_key=record.partition_key,
        attempt=record.attempt,
        status=RunStatus(record.status.value.upper()),
        error_message=record.error_message,
    )


__all__ = [
    "FinishedBackfill",
    "FinishedRun",
    "FrozenClock",
    "InlineLauncher",
    "LaunchRefused",
    "run_backfill",
    "temporary_backend",
]
