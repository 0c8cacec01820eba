"""The write of new backfills: each row, its tags, its webhooks and its LAUNCHED event, once
per idempotency key, alone or as a group of launches that commit together."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import Connection, bindparam, func, insert, select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import class_mapper, make_transient_to_detached

from backfiller.domain import (
    BackfillKind,
    BackfillState,
    EventKind,
    Order,
    Reprocess,
    SelectionKind,
)
from backfiller.storage.auth import AuditEntry, add_audit_entries
from backfiller.storage.backfill_listing import add_asset_names
from backfiller.storage.errors import IdempotencyConflict
from backfiller.storage.events import EVENTS, event_row
from backfiller.storage.notifications import WebhookTarget, add_webhooks
from backfiller.storage.prepared import Prepared
from backfiller.storage.records import BackfillRecord, BackfillTagRecord, table_of

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
    """Everything needed to insert a backfill: the private command a launch becomes (built by
    ``backfiller.services.launch_types.new_backfill``)."""

    job_name: str
    """The job of a job backfill; empty for an asset backfill (its target is ``asset_target``)."""
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
    team: str | None = None
    """The team it acts for: its launcher's (``backfills.team``)."""
    priority: int = 0
    notify: tuple[WebhookTarget, ...] = ()
    trace_parent: str | None = None
    asset_target: dict[str, Any] | None = None
    """An asset backfill's target and per-asset partitions (``backfiller.planning.asset_plan``)."""

    @property
    def kind(self) -> BackfillKind:
        return BackfillKind.JOB if self.asset_target is None else BackfillKind.ASSETS


def _backfill_values(new: NewBackfill, now: datetime) -> dict[str, Any]:
    """The parameters of ``_INSERT_BACKFILL`` for ``new``, launched at ``now``."""
    return {
        "kind": new.kind,
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
        "team": new.team,
        "priority": new.priority,
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
    add_asset_names(conn, [(pk, new.asset_target)])
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
    add_asset_names(
        conn, [(pk, new.asset_target) for pk, (new, _) in zip(pks, launches, strict=True)]
    )
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


AuditOf = Callable[[int], AuditEntry]
"""The audit entry of a successful launch, given the new backfill's primary key."""


@dataclass(frozen=True, slots=True)
class Launch:
    """One launch's write, as queued for its group's transaction."""

    new: NewBackfill
    now: datetime
    audit: AuditOf | None = None


def write_launches(
    conn: Connection, launches: Sequence[Launch]
) -> list[BackfillRecord | IdempotencyHit]:
    """The writes of launches that commit together: each backfill once per idempotency key
    (``launch_many``), then the audit entry of each one created, in the same transaction (the
    batch of ``Database.transact_batched``)."""
    outcomes = launch_many(conn, [(launch.new, launch.now) for launch in launches])
    audits = [
        launch.audit(outcome.id)
        for launch, outcome in zip(launches, outcomes, strict=True)
        if launch.audit is not None and isinstance(outcome, BackfillRecord)
    ]
    add_audit_entries(conn, audits)
    return outcomes


__all__ = [
    "AuditOf",
    "IdempotencyHit",
    "Launch",
    "NewBackfill",
    "add_backfill",
    "add_backfills",
    "launch_many",
    "launch_once",
    "write_launches",
]
