"""Benchmark of ``markPartitions``: the time to mark ranges of 1 to 40,000 partitions of a
daily job, through the service (validation, the locked check and the write, one transaction).

On a fresh SQLite database, or on ``BENCH_DATABASE_URL`` (migrated here; use an empty
database: the marks stay). Run with ``python -m bench.marks``. Not a test: it asserts nothing.
"""

from __future__ import annotations

import asyncio
import os
import time

from backfiller import DailyPartitions, Definitions, RunContext, job
from backfiller.clock import utc_now
from backfiller.config import Settings
from backfiller.domain import MarkStatus, SelectionKind
from backfiller.planning import Selection
from backfiller.services.backend import Backend
from backfiller.services.launch_types import LaunchRequest
from backfiller.services.marking import MarkPlan, MarkRequest, mark_partitions, validate_mark
from backfiller.storage import Database
from backfiller.storage.migrations import upgrade_database
from backfiller.testing import temporary_backend


@job(partitions=DailyPartitions(start="1900-01-01", end="2030-01-01"))
def days(context: RunContext) -> None:
    """Nothing: the benchmark never runs it."""


DEFINITIONS = Definitions(jobs=[days])
RANGES = [
    ("2000-01-01", "2000-01-01"),  # 1
    ("1950-01-01", "1952-09-26"),  # 1,000
    ("1960-01-01", "1987-05-18"),  # 10,000
    ("1900-01-01", "2009-07-06"),  # 39,999
]


async def measure(backend: Backend) -> None:
    dialect = backend.database.write_engine.dialect.name
    for start, end in RANGES:
        target = LaunchRequest(job="days", selection=Selection(SelectionKind.RANGE, start, end))
        request = MarkRequest(target, MarkStatus.SUCCEEDED, "bench")
        began = time.perf_counter()
        plan = await validate_mark(backend, request)
        if not isinstance(plan, MarkPlan):
            raise SystemExit(f"refused: {plan}")
        count = await mark_partitions(backend, plan.parts, request, actor="bench")
        took = time.perf_counter() - began
        print(f"[{dialect}] marked {count} partitions in {took * 1000:.0f} ms")


async def main() -> None:
    url = os.environ.get("BENCH_DATABASE_URL")
    if url is None:
        async with temporary_backend(DEFINITIONS) as backend:
            await measure(backend)
        return
    await asyncio.to_thread(upgrade_database, url)
    database = Database(url)
    try:
        await measure(Backend(database, DEFINITIONS, Settings(), utc_now))
    finally:
        await database.dispose()


if __name__ == "__main__":
    asyncio.run(main())
