"""What operators read of the database: the figures the daemon's metrics show (backfills by
status, the partitions of unfinished backfills by state, the oldest planned partition that could
run now) and the migration the readiness checks compare with this release's head."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime

from sqlalchemy import func, or_, select, text
from sqlalchemy.ext.asyncio import AsyncSession

from backfiller.domain import UNFINISHED_BACKFILL_STATES, BackfillState, SlotState
from backfiller.storage.records import BackfillRecord, SlotRecord


@dataclass(frozen=True, slots=True)
class BackfillStats:
    """One read of the figures (three statements in one read transaction)."""

    by_status: dict[BackfillState, int]
    pending: int
    queued: int
    running: int
    oldest_waiting: datetime | None
    """When the oldest PENDING slot of a RUNNING backfill that may run now last changed."""


async def backfill_stats(session: AsyncSession, now: datetime) -> BackfillStats:
    """The figures as of ``now`` (a slot waiting out its retry delay does not count as
    waiting until the delay is over)."""
    unfinished = sorted(UNFINISHED_BACKFILL_STATES)
    by_status = dict(
        (
            await session.execute(
                select(BackfillRecord.status, func.count()).group_by(BackfillRecord.status)
            )
        ).all()
    )
    pending, queued, running = (
        await session.execute(
            select(
                func.coalesce(func.sum(BackfillRecord.pending), 0),
                func.coalesce(func.sum(BackfillRecord.queued), 0),
                func.coalesce(func.sum(BackfillRecord.running), 0),
            ).where(BackfillRecord.status.in_(unfinished))
        )
    ).one()
    oldest = (
        await session.execute(
            select(func.min(SlotRecord.updated_at))
            .join(BackfillRecord, BackfillRecord.id == SlotRecord.backfill_id)
            .where(
                BackfillRecord.status == BackfillState.RUNNING,
                SlotRecord.status == SlotState.PENDING,
                or_(SlotRecord.next_attempt_at.is_(None), SlotRecord.next_attempt_at <= now),
            )
        )
    ).scalar_one_or_none()
    if oldest is not None and oldest.tzinfo is None:  # an aggregate skips the column's type
        oldest = oldest.replace(tzinfo=UTC)
    return BackfillStats(by_status, int(pending), int(queued), int(running), oldest)


async def stamped_revision(session: AsyncSession) -> str | None:
    """The migration stamped in the database (Alembic's ``alembic_version``)."""
    found = await session.execute(text("SELECT version_num FROM alembic_version"))
    return found.scalar_one_or_none()


__all__ = ["BackfillStats", "backfill_stats", "stamped_revision"]
