"""A backfill's own status moves: started, failed, completed, canceled; and its events."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from sqlalchemy import func, select, update

from backfiller.domain import BackfillState, EventKind, SlotState, expected_for
from backfiller.storage.execution.common import SessionRepository, active_t, changed
from backfiller.storage.records import BackfillRecord, SlotRecord
from backfiller.storage.repositories import EventRepository

STARTABLE = frozenset({BackfillState.REQUESTED})
COMPLETABLE = frozenset({BackfillState.RUNNING})


class CompletionRepository(SessionRepository):
    async def backfills_in(self, statuses: Sequence[BackfillState]) -> list[BackfillRecord]:
        result = await self.session.execute(
            select(BackfillRecord)
            .where(BackfillRecord.status.in_(list(statuses)))
            .order_by(BackfillRecord.id)
            .execution_options(populate_existing=True)
        )
        return list(result.scalars())

    async def active_runs_by_job(self) -> dict[str, int]:
        result = await self.session.execute(
            select(active_t.c.job_name, func.count()).group_by(active_t.c.job_name)
        )
        return {name: int(n) for name, n in result.all()}

    async def add_event(
        self, backfill_id: int, kind: EventKind, at: datetime, message: str | None
    ) -> None:
        await EventRepository(self.session).add(backfill_id, kind, at, None, message)

    async def start_backfill(self, pk: int, now: datetime) -> bool:
        """REQUESTED -> RUNNING, once, with ``started_at`` and a STARTED event."""
        result = await self.session.execute(
            update(BackfillRecord)
            .where(
                BackfillRecord.id == pk,
                BackfillRecord.status.in_(expected_for(BackfillState.RUNNING, STARTABLE)),
            )
            .values(
                status=BackfillState.RUNNING,
                started_at=func.coalesce(BackfillRecord.started_at, now),
                updated_at=now,
                version=BackfillRecord.version + 1,
            )
            .execution_options(synchronize_session=False)
        )
        if not changed(result):
            return False
        await self.add_event(pk, EventKind.STARTED, now, None)
        return True

    async def fail_backfill(self, pk: int, error: str, now: datetime) -> bool:
        """A service-side fault (job or partitions gone): FAILED with the reason."""
        result = await self.session.execute(
            update(BackfillRecord)
            .where(
                BackfillRecord.id == pk,
                BackfillRecord.status.in_(expected_for(BackfillState.FAILED)),
            )
            .values(
                status=BackfillState.FAILED,
                error=error,
                ended_at=now,
                updated_at=now,
                version=BackfillRecord.version + 1,
            )
            .execution_options(synchronize_session=False)
        )
        if not changed(result):
            return False
        await self.add_event(pk, EventKind.FAILED, now, error)
        return True

    async def complete_backfills(self, now: datetime) -> list[tuple[int, BackfillState]]:
        """RUNNING backfills with every partition final become COMPLETED_SUCCESS/FAILED."""
        done = (
            BackfillRecord.planned == BackfillRecord.total,
            BackfillRecord.pending == 0,
            BackfillRecord.queued == 0,
            BackfillRecord.running == 0,
        )
        result = await self.session.execute(
            select(BackfillRecord.id, BackfillRecord.failed, BackfillRecord.succeeded).where(
                BackfillRecord.status.in_(list(COMPLETABLE)), *done
            )
        )
        completed: list[tuple[int, BackfillState]] = []
        for pk, failed, succeeded in result.all():
            to = BackfillState.COMPLETED_FAILED if failed else BackfillState.COMPLETED_SUCCESS
            moved = await self.session.execute(
                update(BackfillRecord)
                .where(
                    BackfillRecord.id == pk,
                    BackfillRecord.status.in_(expected_for(to, COMPLETABLE)),
                    *done,
                )
                .values(status=to, ended_at=now, updated_at=now, version=BackfillRecord.version + 1)
                .execution_options(synchronize_session=False)
            )
            if changed(moved):
                await self.add_event(
                    pk, EventKind.COMPLETED, now, f"{succeeded} succeeded, {failed} failed"
                )
                completed.append((int(pk), to))
        return completed

    async def cancel_pending_slots(self, pk: int, now: datetime) -> int:
        """In a CANCELING backfill, cancel the planned slots that are still pending."""
        locked = await self.session.execute(
            select(BackfillRecord.id)
            .where(BackfillRecord.id == pk, BackfillRecord.status == BackfillState.CANCELING)
            .with_for_update()
        )
        if locked.scalar_one_or_none() is None:
            return 0
        result = await self.session.execute(
            update(SlotRecord)
            .where(SlotRecord.backfill_id == pk, SlotRecord.status == SlotState.PENDING)
            .values(status=SlotState.CANCELED, updated_at=now)
            .execution_options(synchronize_session=False)
        )
        n = changed(result)
        if n:
            await self.session.execute(
                update(BackfillRecord)
                .where(BackfillRecord.id == pk, BackfillRecord.status == BackfillState.CANCELING)
                .values(
                    pending=BackfillRecord.pending - n,
                    canceled=BackfillRecord.canceled + n,
                    updated_at=now,
                    version=BackfillRecord.version + 1,
                )
                .execution_options(synchronize_session=False)
            )
        return n
