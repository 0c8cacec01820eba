"""Repositories: intent-named data functions over one session. They never commit."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import (
    Connection,
    bindparam,
    delete,
    func,
    insert,
    select,
    text,
    update,
)
from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncSession
from sqlalchemy.orm import class_mapper, make_transient_to_detached

from backfiller.domain import (
    BackfillState,
    EventKind,
    Order,
    Reprocess,
    RunState,
    SelectionKind,
    SlotState,
    expected_for,
)
from backfiller.storage.errors import IdempotencyConflict
from backfiller.storage.notifications import WebhookTarget, add_webhooks
from backfiller.storage.prepared import Prepared
from backfiller.storage.records import (
    BackfillEventRecord,
    BackfillRecord,
    BackfillTagRecord,
    DynamicPartitionRecord,
    PartitionStateRecord,
    SlotRecord,
    table_of,
)
from backfiller.storage.rows import changed
from backfiller.storage.run_reads import RunReads as RunReads  # its callers import it from here

# Statements built once: building an ORM insert per call costs more than running it.
INSERT_EVENT = insert(table_of(BackfillEventRecord))
EVENTS = Prepared(INSERT_EVENT)
"""``INSERT_EVENT`` prepared (``storage/prepared.py``): for a launch's and a tick's events."""


def event_row(
    backfill_id: int, kind: EventKind, at: datetime, actor: str | None, message: str | None
) -> dict[str, Any]:
    """The parameters of ``INSERT_EVENT`` for one event."""
    return {
        "backfill_id": backfill_id,
        "kind": kind.value,
        "at": at,
        "actor": actor,
        "message": message,
    }


_INSERT_TAG = Prepared(insert(table_of(BackfillTagRecord)))
_INSERT_BACKFILL = Prepared(
    insert(table_of(BackfillRecord)).returning(table_of(BackfillRecord).c.id)
)
# Several rows at once (``_insert_backfill_rows``): with their ids on SQLite, else numbered
# by the database and returned in the order of the rows.
_INSERT_NUMBERED_BACKFILLS = Prepared(insert(table_of(BackfillRecord)))
_LARGEST_BACKFILL_ID = Prepared(select(func.max(BackfillRecord.id)))
_INSERT_BACKFILLS = insert(table_of(BackfillRecord)).returning(
    table_of(BackfillRecord).c.id, sort_by_parameter_order=True
)
_FIND_BY_IDEMPOTENCY_KEY = select(BackfillRecord.id, BackfillRecord.request_fingerprint).where(
    BackfillRecord.idempotency_key == bindparam("key")
)
_FIND_BY_IDEMPOTENCY_KEYS = select(
    BackfillRecord.idempotency_key, BackfillRecord.id, BackfillRecord.request_fingerprint
).where(BackfillRecord.idempotency_key.in_(bindparam("keys", expanding=True)))


@dataclass(frozen=True, slots=True)
class NewBackfill:
    """Everything needed to insert a backfill: the private command a launch becomes."""

    job_name: str
    selection_kind: SelectionKind
    range_start: str | None
    range_end: str | None
    keys: list[str] | None
    partitions_fingerprint: str
    first_index: int
    total: int
    reprocess: Reprocess
    order: Order
    max_concurrent_runs: int | None
    run_config: dict[str, Any] | None
    tags: list[tuple[str, str]]
    title: str | None
    description: str | None
    idempotency_key: str | None
    request_fingerprint: str
    creator: str | None
    parent_id: int | None = None
    notify: tuple[WebhookTarget, ...] = ()
    trace_parent: str | None = None
    asset_target: dict[str, Any] | None = None
    """An asset backfill's target and per-asset partitions (``backfiller.planning.asset_plan``)."""


@dataclass(frozen=True, slots=True)
class BackfillQuery:
    statuses: Sequence[BackfillState] | None = None
    job_name: str | None = None
    tag: tuple[str, str] | None = None


def _backfill_values(new: NewBackfill, now: datetime) -> dict[str, Any]:
    """The parameters of ``_INSERT_BACKFILL`` for ``new``, launched at ``now``."""
    return {
        "job_name": new.job_name,
        "selection_kind": new.selection_kind,
        "range_start": new.range_start,
        "range_end": new.range_end,
        "keys": new.keys,
        "partitions_fingerprint": new.partitions_fingerprint,
        "first_index": new.first_index,
        "reprocess": new.reprocess,
        "order": new.order,
        "max_concurrent_runs": new.max_concurrent_runs,
        "run_config": new.run_config,
        "tags": [[k, v] for k, v in new.tags],
        "title": new.title,
        "description": new.description,
        "idempotency_key": new.idempotency_key,
        "request_fingerprint": new.request_fingerprint,
        "status": BackfillState.REQUESTED,
        "error": None,
        "creator": new.creator,
        "parent_id": new.parent_id,
        "created_at": now,
        "started_at": None,
        "ended_at": None,
        "updated_at": now,
        "planned": 0,
        "total": new.total,
        "pending": new.total,
        "queued": 0,
        "running": 0,
        "succeeded": 0,
        "failed": 0,
        "canceled": 0,
        "skipped": 0,
        "version": 0,
        "trace_parent": new.trace_parent,
        "asset_target": new.asset_target,
    }


def _detached_record(pk: int, values: dict[str, Any]) -> BackfillRecord:
    """The record of a row just inserted, detached as if loaded then let go: its values
    set as loaded ones (no change to flush), which costs a tenth of the constructor's
    attribute events (about 55 us a record)."""
    # class_mapper configures the mappers if need be, as the constructor would have.
    record: BackfillRecord = class_mapper(BackfillRecord).class_manager.new_instance()
    record.__dict__.update(values, id=pk)
    make_transient_to_detached(record)
    return record


def add_backfill(conn: Connection, new: NewBackfill, now: datetime) -> BackfillRecord:
    """Insert a backfill, its tags and its LAUNCHED event; the record returned is detached.

    Synchronous, for ``Database.transact`` (or ``run_sync``): a launch is the API's hottest
    write, and one trip into SQLAlchemy's synchronous core for the whole transaction costs far
    less than a trip per statement. One ``INSERT ... RETURNING`` of a statement built once, not
    an ORM flush.
    """
    values = _backfill_values(new, now)
    ((pk,),) = _INSERT_BACKFILL.rows(conn, values)
    if new.tags:
        _INSERT_TAG.many(conn, [{"backfill_id": pk, "key": k, "value": v} for k, v in new.tags])
    add_webhooks(conn, pk, new.notify)
    EVENTS.rows(conn, event_row(pk, EventKind.LAUNCHED, now, new.creator, None))
    return _detached_record(pk, values)


@dataclass(frozen=True, slots=True)
class IdempotencyHit:
    """The backfill an idempotency key already names."""

    backfill_id: int
    request_fingerprint: str


def launch_once(
    conn: Connection, new: NewBackfill, now: datetime
) -> BackfillRecord | IdempotencyHit:
    """The write of a launch, in the caller's transaction: the backfill, unless its
    idempotency key is taken (then the backfill that holds it).

    The caller adds what belongs to the same transaction (the audit entry) after it.

    Raises:
        IdempotencyConflict: a concurrent launch inserted the same key first (the unique
            index refused this one); launching again finds that backfill.
    """
    key = new.idempotency_key
    if key is not None:
        row = conn.execute(_FIND_BY_IDEMPOTENCY_KEY, {"key": key}).first()
        if row is not None:
            return IdempotencyHit(row.id, row.request_fingerprint)
        try:
            return add_backfill(conn, new, now)
        except IntegrityError as error:  # the whole transaction rolls back: no savepoint
            raise IdempotencyConflict(key) from error
    return add_backfill(conn, new, now)


def add_backfills(
    conn: Connection, launches: Sequence[tuple[NewBackfill, datetime]]
) -> list[BackfillRecord]:
    """``add_backfill`` of each ``(new, now)``, in that order, statement by statement: one
    insert of all the backfills, one of all their tags, one of all their LAUNCHED events.

    For a group of launches that commit together (``launch_many``); a row is inserted in
    the same way as by ``add_backfill``, which stays the path of a launch alone.
    """
    values = [_backfill_values(new, now) for new, now in launches]
    pks = _insert_backfill_rows(conn, values)
    tags = [
        {"backfill_id": pk, "key": k, "value": v}
        for pk, (new, _) in zip(pks, launches, strict=True)
        for k, v in new.tags
    ]
    if tags:
        _INSERT_TAG.many(conn, tags)
    for pk, (new, _) in zip(pks, launches, strict=True):
        add_webhooks(conn, pk, new.notify)
    events = [
        event_row(pk, EventKind.LAUNCHED, now, new.creator, None)
        for pk, (new, now) in zip(pks, launches, strict=True)
    ]
    EVENTS.many(conn, events)
    return [_detached_record(pk, row) for pk, row in zip(pks, values, strict=True)]


def _insert_backfill_rows(conn: Connection, rows: list[dict[str, Any]]) -> list[int]:
    """Insert ``rows`` into ``backfills`` in one statement; their ids, in the same order.

    On SQLite the transaction holds the database's one write lock from its start (``BEGIN
    IMMEDIATE``), and ``id`` is the rowid, which SQLite numbers on from the largest: the rows
    get those same numbers here, and the insert is a plain ``executemany`` (SQLAlchemy would
    insert a row at a time to return SQLite's ids in order). Elsewhere the database numbers
    them (``INSERT ... RETURNING``, in the order of the rows).
    """
    if conn.dialect.name != "sqlite":
        return list(conn.execute(_INSERT_BACKFILLS, rows).scalars())
    ((largest,),) = _LARGEST_BACKFILL_ID.rows(conn, {})
    first = (largest or 0) + 1
    pks = list(range(first, first + len(rows)))
    for pk, row in zip(pks, rows, strict=True):
        row["id"] = pk
    _INSERT_NUMBERED_BACKFILLS.many(conn, rows)
    return pks


def launch_many(
    conn: Connection, launches: Sequence[tuple[NewBackfill, datetime]]
) -> list[BackfillRecord | IdempotencyHit]:
    """``launch_once`` of each ``(new, now)``, in that order, in one transaction: what each
    would have returned had they run one after the other, in fewer statements (one lookup
    of all the idempotency keys, then ``add_backfills``).

    A launch whose key an earlier one of ``launches`` inserts gets that backfill as its hit.
    One launch alone is ``launch_once``.

    Raises:
        IdempotencyConflict: as ``launch_once``, for one launch. For several, any error
            (the unique index refusing a key included) is the whole group's: each launch
            alone tells whose it is.
    """
    if len(launches) == 1:
        new, now = launches[0]
        return [launch_once(conn, new, now)]
    keys = {new.idempotency_key for new, _ in launches if new.idempotency_key is not None}
    hits: dict[str | None, IdempotencyHit] = {}
    if keys:
        for key, pk, fingerprint in conn.execute(_FIND_BY_IDEMPOTENCY_KEYS, {"keys": list(keys)}):
            hits[key] = IdempotencyHit(pk, fingerprint)
    outcomes: list[BackfillRecord | IdempotencyHit | None] = []
    fresh: list[tuple[NewBackfill, datetime]] = []
    first_of_key: dict[str, int] = {}  # a key inserted here: the index of its launch in fresh
    later: list[tuple[int, int]] = []  # (index in outcomes, index in fresh) of a repeated key
    for new, now in launches:
        key = new.idempotency_key
        if key is not None and key in hits:
            outcomes.append(hits[key])
        elif key is not None and key in first_of_key:
            later.append((len(outcomes), first_of_key[key]))
            outcomes.append(None)
        else:
            if key is not None:
                first_of_key[key] = len(fresh)
            outcomes.append(None)
            fresh.append((new, now))
    records = add_backfills(conn, fresh) if fresh else []
    for at, source in later:
        outcomes[at] = IdempotencyHit(records[source].id, records[source].request_fingerprint)
    inserted = iter(records)
    return [outcome if outcome is not None else next(inserted) for outcome in outcomes]


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

    async def cancel_idle(self, pk: int, now: datetime) -> bool:
        """Cancel a backfill at once when nothing of it is queued or running.

        Every partition not yet final is counted canceled, in the same conditional update.
        """
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
