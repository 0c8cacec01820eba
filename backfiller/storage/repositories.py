"""Repositories: intent-named data functions over one session. They never commit."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import (
    delete,
    func,
    insert,
    select,
    text,
    update,
)
from sqlalchemy.ext.asyncio import AsyncSession

from backfiller.domain import (
    BackfillState,
    EventKind,
    RunState,
    SlotState,
    expected_for,
)
from backfiller.storage.events import INSERT_EVENT, event_row
from backfiller.storage.launches import NewBackfill, add_backfill
from backfiller.storage.records import (
    BackfillEventRecord,
    BackfillRecord,
    DynamicPartitionRecord,
    PartitionStateRecord,
    SlotRecord,
)
from backfiller.storage.rows import changed
from backfiller.storage.run_reads import RunReads as RunReads  # its callers import it from here


@dataclass(frozen=True, slots=True)
class BackfillQuery:
    statuses: Sequence[BackfillState] | None = None
    job_name: str | None = None
    tag: tuple[str, str] | None = None
    asset: str | None = None
    creator: str | None = None
    team: str | None = None
    tags: Sequence[tuple[str, str]] = ()
    title_contains: str | None = None
    created_after: datetime | None = None
    created_before: datetime | None = None


class BackfillRepository:
    def __init__(self, session: AsyncSession) -> None:
        self.session = session

    async def add(self, new: NewBackfill, now: datetime) -> BackfillRecord:
        """Insert a backfill, its tags and its LAUNCHED event; the record returned is detached."""
        return await self.session.run_sync(lambda sync: add_backfill(sync.connection(), new, now))

    async def get(self, pk: int) -> BackfillRecord | None:
        return await self.session.get(BackfillRecord, pk, populate_existing=True)

    async def get_many(self, pks: Iterable[int]) -> dict[int, BackfillRecord]:
        ids = list(set(pks))
        if not ids:
            return {}
        result = await self.session.execute(
            select(BackfillRecord).where(BackfillRecord.id.in_(ids))
        )
        return {r.id: r for r in result.scalars()}

    async def children(self, pk: int) -> list[BackfillRecord]:
        result = await self.session.execute(
            select(BackfillRecord).where(BackfillRecord.parent_id == pk).order_by(BackfillRecord.id)
        )
        return list(result.scalars())

    async def move(
        self,
        pk: int,
        to: BackfillState,
        expected: Iterable[BackfillState],
        now: datetime,
        **values: Any,
    ) -> bool:
        """Conditionally move a backfill to ``to``: only from one of the ``expected`` states.

        Returns whether the row changed; a stale caller changes nothing.
        """
        stmt = (
            update(BackfillRecord)
            .where(BackfillRecord.id == pk, BackfillRecord.status.in_(list(expected)))
            .values(status=to, updated_at=now, version=BackfillRecord.version + 1, **values)
            .execution_options(synchronize_session=False)
        )
        result = await self.session.execute(stmt)
        return changed(result) > 0

    async def update_settings(
        self, pk: int, expected: Iterable[BackfillState], now: datetime, **values: Any
    ) -> bool:
        """Change a backfill's settings (limit, priority, title, description) while it is in
        one of the ``expected`` states; whether it changed (a stale caller changes nothing)."""
        stmt = (
            update(BackfillRecord)
            .where(BackfillRecord.id == pk, BackfillRecord.status.in_(list(expected)))
            .values(updated_at=now, version=BackfillRecord.version + 1, **values)
            .execution_options(synchronize_session=False)
        )
        result = await self.session.execute(stmt)
        return changed(result) > 0

    async def cancel_idle(self, pk: int, now: datetime) -> bool:
        """Cancel a backfill at once when nothing of it is queued or running.

        Every partition not yet final is counted canceled, in the same conditional update.
        The pending slots are locked first, the backfill row last: the lock order of
        ``storage/execution`` (a claim holds the slots it takes, then updates the row's
        counters; taking the row first deadlocked with it on PostgreSQL).
        """
        in_flight = await self.session.execute(
            select(BackfillRecord.queued + BackfillRecord.running).where(BackfillRecord.id == pk)
        )
        if in_flight.scalar() != 0:  # runs in flight (or no such backfill): the daemon ends it
            return False
        await self.session.execute(
            select(SlotRecord.id)
            .where(SlotRecord.backfill_id == pk, SlotRecord.status == SlotState.PENDING)
            .with_for_update()
        )
        stmt = (
            update(BackfillRecord)
            .where(
                BackfillRecord.id == pk,
                BackfillRecord.status.in_(expected_for(BackfillState.CANCELED)),
                BackfillRecord.queued == 0,
                BackfillRecord.running == 0,
            )
            .values(
                status=BackfillState.CANCELED,
                canceled=BackfillRecord.canceled + BackfillRecord.pending,
                pending=0,
                ended_at=now,
                updated_at=now,
                version=BackfillRecord.version + 1,
            )
            .execution_options(synchronize_session=False)
        )
        result = await self.session.execute(stmt)
        if not changed(result):
            return False
        await self.session.execute(
            update(SlotRecord)
            .where(SlotRecord.backfill_id == pk, SlotRecord.status == SlotState.PENDING)
            .values(status=SlotState.CANCELED, updated_at=now)
            .execution_options(synchronize_session=False)
        )
        return True


class EventRepository:
    def __init__(self, session: AsyncSession) -> None:
        self.session = session

    async def add(
        self,
        backfill_id: int,
        kind: EventKind,
        at: datetime,
        actor: str | None,
        message: str | None,
    ) -> None:
        await self.session.execute(INSERT_EVENT, event_row(backfill_id, kind, at, actor, message))

    async def page(
        self, backfill_id: int, limit: int, after_id: int | None, *, newest_first: bool = False
    ) -> list[BackfillEventRecord]:
        """A page of events in id order (descending with ``newest_first``), after a cursor."""
        order = BackfillEventRecord.id.desc() if newest_first else BackfillEventRecord.id
        stmt = (
            select(BackfillEventRecord)
            .where(BackfillEventRecord.backfill_id == backfill_id)
            .order_by(order)
            .limit(limit)
        )
        if after_id is not None:
            beyond = (
                BackfillEventRecord.id < after_id
                if newest_first
                else BackfillEventRecord.id > after_id
            )
            stmt = stmt.where(beyond)
        return list((await self.session.execute(stmt)).scalars())


_WALK_END = 9_000_000_000_000_000_000


def _status_walk_sql(dialect: str) -> str:
    current = "(SELECT c.status FROM slots c WHERE c.backfill_id = :b AND c.position = w.pos)"
    nexts = [
        f"CASE WHEN {current} = '{state.value}' THEN {_WALK_END} ELSE COALESCE("
        f"(SELECT MIN(x.position) FROM slots x WHERE x.backfill_id = :b "
        f"AND x.status = '{state.value}' AND x.position > w.pos), {_WALK_END}) END"
        for state in SlotState
    ]
    least = "LEAST" if dialect == "postgresql" else "MIN"  # SQLite's scalar min()
    return (
        "WITH RECURSIVE w(pos) AS ("
        " SELECT MIN(position) FROM slots WHERE backfill_id = :b"
        f" UNION ALL SELECT {least}({', '.join(nexts)}) FROM w WHERE w.pos < {_WALK_END}"
        ") SELECT w.pos, s.status FROM w JOIN slots s"
        " ON s.backfill_id = :b AND s.position = w.pos ORDER BY w.pos"
    )


class SlotReads:
    """Read-only views of a backfill's materialized slots."""

    def __init__(self, session: AsyncSession) -> None:
        self.session = session

    async def status_changes(self, backfill_id: int) -> list[tuple[int, SlotState]]:
        """(position, status) of each slot whose status differs from the previous position's.

        Walks the (backfill_id, status, position) index with a recursive query: one index
        seek per status per change, so the cost grows with the number of status ranges, not
        with the number of slots (a 100,000-slot backfill in a few hundred ranges: ~10 ms).
        """
        result = await self.session.execute(
            text(_status_walk_sql(self.session.get_bind().dialect.name)), {"b": backfill_id}
        )
        return [(int(p), SlotState(s)) for p, s in result.all()]

    async def statuses(self, backfill_id: int) -> list[tuple[int, SlotState]]:
        """(position, status) of every materialized slot, by position."""
        result = await self.session.execute(
            select(SlotRecord.position, SlotRecord.status)
            .where(SlotRecord.backfill_id == backfill_id)
            .order_by(SlotRecord.position)
        )
        return [(int(p), SlotState(s)) for p, s in result.all()]

    async def page(
        self,
        backfill_id: int,
        after_position: int,
        limit: int,
        statuses: Sequence[SlotState] | None,
    ) -> list[SlotRecord]:
        stmt = (
            select(SlotRecord)
            .where(SlotRecord.backfill_id == backfill_id, SlotRecord.position > after_position)
            .order_by(SlotRecord.position)
            .limit(limit)
        )
        if statuses:
            stmt = stmt.where(SlotRecord.status.in_(list(statuses)))
        return list((await self.session.execute(stmt)).scalars())


class PartitionStateRepository:
    """The latest outcome of each (job, partition), across all backfills."""

    def __init__(self, session: AsyncSession) -> None:
        self.session = session

    async def all_of_job(
        self, job_name: str, statuses: Sequence[RunState] | None = None
    ) -> dict[str, RunState]:
        stmt = select(PartitionStateRecord.partition_key, PartitionStateRecord.status).where(
            PartitionStateRecord.job_name == job_name
        )
        if statuses:
            stmt = stmt.where(PartitionStateRecord.status.in_(list(statuses)))
        result = await self.session.execute(stmt)
        return {k: RunState(s) for k, s in result.all()}


class DynamicPartitionRepository:
    def __init__(self, session: AsyncSession) -> None:
        self.session = session

    async def keys(self, name: str) -> list[str]:
        result = await self.session.execute(
            select(DynamicPartitionRecord.key)
            .where(DynamicPartitionRecord.name == name)
            .order_by(DynamicPartitionRecord.id)
        )
        return list(result.scalars())

    async def add(self, name: str, keys: Sequence[str], now: datetime) -> int:
        """Add the keys not there yet, in the given order; returns how many were new."""
        existing = set(await self.keys(name))
        fresh = [k for k in dict.fromkeys(keys) if k not in existing]
        if fresh:
            await self.session.execute(
                insert(DynamicPartitionRecord),
                [{"name": name, "key": k, "created_at": now} for k in fresh],
            )
        return len(fresh)

    async def delete(self, name: str, keys: Sequence[str]) -> int:
        result = await self.session.execute(
            delete(DynamicPartitionRecord).where(
                DynamicPartitionRecord.name == name, DynamicPartitionRecord.key.in_(list(keys))
            )
        )
        return changed(result)

    async def count(self, name: str) -> int:
        result = await self.session.execute(
            select(func.count()).where(DynamicPartitionRecord.name == name)
        )
        return int(result.scalar_one())
