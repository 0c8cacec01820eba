"""Reads of a backfill's timeline (``resolvers/timeline.py``): its runs, as columns, inside a
read transaction that sees one snapshot of the database.

On SQLite a read transaction in WAL mode is a snapshot by itself; on PostgreSQL the
transaction is made ``REPEATABLE READ``, so that every statement in it sees the same
snapshot (at ``READ COMMITTED`` each statement would see its own).
"""

from __future__ import annotations

from datetime import datetime
from typing import NamedTuple

from sqlalchemy import func, select, text
from sqlalchemy.ext.asyncio import AsyncSession

from backfiller.domain import FailureReason, RunState
from backfiller.storage.records import RunRecord


class TimelineRun(NamedTuple):
    id: int
    job_name: str
    partition_key: str
    attempt: int
    status: RunState
    worker: str | None
    queued_at: datetime
    started_at: datetime | None
    ended_at: datetime | None
    failure_reason: FailureReason | None
    error_message: str | None


async def one_snapshot(session: AsyncSession) -> None:
    """Make the session's transaction, not begun yet, read one snapshot throughout."""
    if session.get_bind().dialect.name == "postgresql":
        await session.execute(text("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ READ ONLY"))


async def timeline_runs(session: AsyncSession, backfill_id: int, limit: int) -> list[TimelineRun]:
    """The newest ``limit`` runs of a backfill (a ranged run once, by its lead row)."""
    stmt = (
        select(
            RunRecord.id,
            RunRecord.job_name,
            RunRecord.partition_key,
            RunRecord.attempt,
            RunRecord.status,
            RunRecord.worker,
            RunRecord.queued_at,
            RunRecord.started_at,
            RunRecord.ended_at,
            RunRecord.failure_reason,
            RunRecord.error_message,
        )
        .where(RunRecord.backfill_id == backfill_id, RunRecord.lead_run_id.is_(None))
        .order_by(RunRecord.id.desc())
        .limit(limit)
    )
    return [TimelineRun._make(row) for row in (await session.execute(stmt)).all()]


async def count_runs(session: AsyncSession, backfill_id: int) -> int:
    stmt = select(func.count()).where(
        RunRecord.backfill_id == backfill_id, RunRecord.lead_run_id.is_(None)
    )
    return int((await session.execute(stmt)).scalar_one())


__all__ = ["TimelineRun", "count_runs", "one_snapshot", "timeline_runs"]
