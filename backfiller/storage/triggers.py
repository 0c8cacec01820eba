"""Repositories of triggers: their state and their evaluations. They never commit."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

from sqlalchemy import select, update
from sqlalchemy.ext.asyncio import AsyncSession

from backfiller.storage.rows import changed
from backfiller.storage.trigger_records import (
    TriggerEvaluationRecord,
    TriggerLatestEvaluationRecord,
    TriggerOutcome,
    TriggerStateRecord,
)
from backfiller.storage.upserts import upsert


class TriggerStateRepository:
    """The persisted state of triggers: enabled, cursor, schedule."""

    def __init__(self, session: AsyncSession) -> None:
        self.session = session

    async def get(self, name: str) -> TriggerStateRecord | None:
        return await self.session.get(TriggerStateRecord, name, populate_existing=True)

    async def get_many(self, names: Sequence[str]) -> dict[str, TriggerStateRecord]:
        if not names:
            return {}
        result = await self.session.execute(
            select(TriggerStateRecord).where(TriggerStateRecord.name.in_(list(names)))
        )
        return {r.name: r for r in result.scalars()}

    async def ensure(
        self,
        name: str,
        interval_seconds: float | None,
        now: datetime,
        *,
        schedule: str | None = None,
        first_at: datetime | None = None,
    ) -> TriggerStateRecord:
        """The state of ``name``, inserted first when missing (safe under concurrency).

        A new trigger with an interval is due at once; one with a cron ``schedule`` at its
        first tick, ``first_at``.
        """
        values: dict[str, Any] = {
            "name": name,
            "enabled": True,
            "cursor": None,
            "cursor_version": 0,
            "interval_seconds": interval_seconds,
            "next_evaluation_at": now if interval_seconds is not None else first_at,
            "last_evaluation_at": None,
            "updated_at": now,
            "schedule": schedule,
        }
        dialect = self.session.get_bind().dialect.name
        await self.session.execute(
            upsert(dialect, TriggerStateRecord).values(**values).on_conflict_do_nothing()
        )
        found = await self.get(name)
        assert found is not None
        return found

    async def set_enabled(self, name: str, enabled: bool, now: datetime) -> None:
        await self.session.execute(
            update(TriggerStateRecord)
            .where(TriggerStateRecord.name == name)
            .values(enabled=enabled, updated_at=now)
            .execution_options(synchronize_session=False)
        )

    async def set_interval(
        self, name: str, interval_seconds: float | None, next_at: datetime | None, now: datetime
    ) -> None:
        """Follow a changed interval in the definitions."""
        await self.session.execute(
            update(TriggerStateRecord)
            .where(TriggerStateRecord.name == name)
            .values(
                interval_seconds=interval_seconds,
                next_evaluation_at=next_at,
                schedule=None,
                updated_at=now,
            )
            .execution_options(synchronize_session=False)
        )

    async def set_schedule(
        self,
        name: str,
        schedule: str,
        expected_next: datetime | None,
        next_at: datetime | None,
        now: datetime,
    ) -> bool:
        """Follow a new or changed cron schedule from its tick ``next_at``, only if the next
        evaluation time is still ``expected_next``. Returns whether this caller set it."""
        condition = (
            TriggerStateRecord.next_evaluation_at.is_(None)
            if expected_next is None
            else TriggerStateRecord.next_evaluation_at == expected_next
        )
        result = await self.session.execute(
            update(TriggerStateRecord)
            .where(TriggerStateRecord.name == name, condition)
            .values(
                interval_seconds=None,
                schedule=schedule,
                next_evaluation_at=next_at,
                updated_at=now,
            )
            .execution_options(synchronize_session=False)
        )
        return bool(changed(result))

    async def claim_due(
        self, name: str, expected_next: datetime | None, next_at: datetime | None, now: datetime
    ) -> bool:
        """Move the next evaluation time forward, only if nobody else did: the winner
        evaluates. Returns whether this caller won."""
        condition = (
            TriggerStateRecord.next_evaluation_at.is_(None)
            if expected_next is None
            else TriggerStateRecord.next_evaluation_at == expected_next
        )
        result = await self.session.execute(
            update(TriggerStateRecord)
            .where(TriggerStateRecord.name == name, TriggerStateRecord.enabled.is_(True), condition)
            .values(next_evaluation_at=next_at, updated_at=now)
            .execution_options(synchronize_session=False)
        )
        return bool(changed(result))

    async def save_cursor(
        self, name: str, expected_version: int, cursor: str | None, now: datetime
    ) -> bool:
        """Write the cursor only over the version the evaluation read. Returns whether it did."""
        result = await self.session.execute(
            update(TriggerStateRecord)
            .where(
                TriggerStateRecord.name == name,
                TriggerStateRecord.cursor_version == expected_version,
            )
            .values(
                cursor=cursor,
                cursor_version=TriggerStateRecord.cursor_version + 1,
                updated_at=now,
            )
            .execution_options(synchronize_session=False)
        )
        return bool(changed(result))

    async def mark_evaluated(self, name: str, at: datetime) -> None:
        await self.session.execute(
            update(TriggerStateRecord)
            .where(TriggerStateRecord.name == name)
            .values(last_evaluation_at=at)
            .execution_options(synchronize_session=False)
        )


class TriggerEvaluationRepository:
    """Every evaluation of every trigger, newest first."""

    def __init__(self, session: AsyncSession) -> None:
        self.session = session

    async def add(
        self,
        *,
        trigger_name: str,
        outcome: TriggerOutcome,
        started_at: datetime,
        evaluated_at: datetime,
        duration_seconds: float,
        actor: str | None,
        dry_run: bool,
        scheduled_at: datetime | None = None,
        skip_reason: str | None = None,
        error_message: str | None = None,
        error_traceback: str | None = None,
        backfill_ids: Sequence[int] = (),
        requests: Sequence[dict[str, Any]] = (),
    ) -> TriggerEvaluationRecord:
        record = TriggerEvaluationRecord(
            trigger_name=trigger_name,
            outcome=outcome,
            skip_reason=skip_reason,
            error_message=error_message,
            error_traceback=error_traceback,
            started_at=started_at,
            evaluated_at=evaluated_at,
            duration_seconds=duration_seconds,
            actor=actor,
            dry_run=dry_run,
            scheduled_at=scheduled_at,
            backfill_ids=list(backfill_ids),
            requests=list(requests),
        )
        self.session.add(record)
        await self.session.flush()
        await self._mark_latest(trigger_name, record.id)
        return record

    async def _mark_latest(self, trigger_name: str, evaluation_id: int) -> None:
        """Name ``evaluation_id`` the trigger's newest, unless a newer one is named already."""
        latest = TriggerLatestEvaluationRecord
        ins = upsert(self.session.get_bind().dialect.name, latest).values(
            trigger_name=trigger_name, evaluation_id=evaluation_id
        )
        await self.session.execute(
            ins.on_conflict_do_update(
                index_elements=[latest.trigger_name],
                set_={"evaluation_id": ins.excluded.evaluation_id},
                where=latest.evaluation_id < ins.excluded.evaluation_id,
            )
        )

    async def get(self, pk: int) -> TriggerEvaluationRecord | None:
        return await self.session.get(TriggerEvaluationRecord, pk)

    async def page(
        self, trigger_name: str, limit: int, before_id: int | None
    ) -> list[TriggerEvaluationRecord]:
        stmt = (
            select(TriggerEvaluationRecord)
            .where(TriggerEvaluationRecord.trigger_name == trigger_name)
            .order_by(TriggerEvaluationRecord.id.desc())
            .limit(limit)
        )
        if before_id is not None:
            stmt = stmt.where(TriggerEvaluationRecord.id < before_id)
        return list((await self.session.execute(stmt)).scalars())

    async def latest(self, names: Sequence[str]) -> dict[str, TriggerEvaluationRecord]:
        """The newest evaluation of each named trigger that has one (one row per trigger in
        ``trigger_latest_evaluations``, then the evaluations by id)."""
        if not names:
            return {}
        latest = TriggerLatestEvaluationRecord
        result = await self.session.execute(
            select(TriggerEvaluationRecord)
            .join(latest, latest.evaluation_id == TriggerEvaluationRecord.id)
            .where(latest.trigger_name.in_(list(names)))
        )
        return {r.trigger_name: r for r in result.scalars()}
