"""The latest state of each (job, partition), as the daemon's writes keep it, on the test's
database: on PostgreSQL the rows of a batch go as arrays in one statement
(``storage.row_arrays``), on SQLite one statement a row; the same states either way."""

from __future__ import annotations

from datetime import UTC, datetime

from sqlalchemy import select

from backfiller.domain import RunState
from backfiller.storage import Database
from backfiller.storage.execution.common import SessionRepository
from backfiller.storage.records import PartitionStateRecord

NOW = datetime(2026, 6, 15, 12, tzinfo=UTC)


async def _states(database: Database) -> dict[tuple[str, str], tuple[RunState, int | None]]:
    async with database.read() as session:
        found = await session.execute(select(PartitionStateRecord))
        return {(r.job_name, r.partition_key): (r.status, r.run_id) for r in found.scalars()}


async def test_a_batch_keeps_each_partitions_newest_run_and_never_an_older_one(
    database: Database,
) -> None:
    async with database.write() as session:
        await SessionRepository(session).record_partition_states(
            [
                ("daily", "2024-01-01", RunState.QUEUED, 10),
                ("daily", "2024-01-02", RunState.QUEUED, 11),
                ("daily", "2024-01-03", RunState.QUEUED, 12),
                ("hourly", "2024-01-01-00:00", RunState.QUEUED, 13),
            ],
            NOW,
        )
    async with database.write() as session:
        await SessionRepository(session).record_partition_states(
            [
                ("daily", "2024-01-01", RunState.SUCCESS, 10),  # its run ended
                ("daily", "2024-01-02", RunState.FAILED, 9),  # an older run: not kept
                ("daily", "2024-01-03", RunState.FAILED, 12),
                ("daily", "2024-01-03", RunState.QUEUED, 14),  # in one batch: the newest wins
                ("daily", "2024-01-04", RunState.SUCCESS, 15),  # a partition first seen
            ],
            NOW,
        )
    assert await _states(database) == {
        ("daily", "2024-01-01"): (RunState.SUCCESS, 10),
        ("daily", "2024-01-02"): (RunState.QUEUED, 11),
        ("daily", "2024-01-03"): (RunState.QUEUED, 14),
        ("daily", "2024-01-04"): (RunState.SUCCESS, 15),
        ("hourly", "2024-01-01-00:00"): (RunState.QUEUED, 13),
    }
