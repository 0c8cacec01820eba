"""Marking partitions by hand: the check and the write of ``markPartitions``, and its history.

A mark records partitions of a job (or of assets) as succeeded or skipped without running
them: a ``partition_marks`` row each (who, what, why) and the partition's ``partition_states``
row set to the marked state with no run (``run_id`` null, so the next run's outcome replaces
it). Planning and claims read ``partition_states``, so a later ``reprocess: MISSING`` skips a
marked partition and an asset downstream of a marked success runs.

A partition that a backfill runs now is never marked: :func:`write_marks` checks and writes in
one transaction that follows the daemon's locking rule. On SQLite the write transaction begins
``IMMEDIATE`` (one writer at a time), so nothing else moves between the check and the write.
On PostgreSQL it takes the rows in the claims' order, so that neither waits for the other in
a cycle:

1. the backfill rows that may hold the partitions (not finished; of the job, or asset
   backfills), ``FOR UPDATE`` in id order: no slot of them is planned, nor a run claimed or
   ended, until the mark commits (each of those moves a backfill's counters);
2. their slots of the partitions, ``FOR UPDATE SKIP LOCKED``: a slot that a claim holds (it
   locked the slot before waiting for the backfill row) is being claimed, so it counts as
   running, and the mark never waits for a slot;
3. the active runs of the partitions (``ix_runs_active_partition``).

Any slot QUEUED or RUNNING, held by another transaction, or any active run, and the mark is
refused, writing nothing: :class:`PartitionsBusy` lists them. Synchronous functions of a Core
connection (``Database.transact`` and ``Database.query``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime

from sqlalchemy import Connection, Executable, and_, bindparam, insert, select

from backfiller.domain import (
    ACTIVE_RUN_STATES,
    UNFINISHED_BACKFILL_STATES,
    BackfillKind,
    MarkStatus,
    SlotState,
)
from backfiller.storage.auth import AuditEntry, add_audit_entries
from backfiller.storage.base import table_of
from backfiller.storage.mark_records import PartitionMarkRecord
from backfiller.storage.records import BackfillRecord, PartitionStateRecord, RunRecord, SlotRecord
from backfiller.storage.upserts import upsert
from backfiller.storage.value_lists import one_of_list

CHUNK = 2_000
"""Keys per statement of a mark (a mark may name as many partitions as a backfill)."""

_marks = table_of(PartitionMarkRecord)
_states = table_of(PartitionStateRecord)
_backfills = table_of(BackfillRecord)
_slots = table_of(SlotRecord)
_runs = table_of(RunRecord)

_UNFINISHED = sorted(UNFINISHED_BACKFILL_STATES)
_ACTIVE_SLOTS = frozenset({SlotState.QUEUED, SlotState.RUNNING})


@dataclass(frozen=True, slots=True)
class MarkedPart:
    """The partitions of one job (or one asset) that a mark names."""

    name: str
    keys: Sequence[str]
    asset: bool = False

    def shown(self, key: str) -> str:
        """How a partition is named to a person: its key, ``asset/key`` for an asset."""
        return f"{self.name}/{key}" if self.asset else key


@dataclass(frozen=True, slots=True)
class Marking:
    """A mark to write: its partitions, what they become, why, who, and its audit entry."""

    parts: Sequence[MarkedPart]
    status: MarkStatus
    reason: str
    actor: str | None
    at: datetime
    audit: AuditEntry | None = None


@dataclass(frozen=True, slots=True)
class PartitionsBusy:
    """The mark was refused: these partitions (as :meth:`MarkedPart.shown`) run now."""

    partitions: list[str] = field(default_factory=list)


def write_marks(conn: Connection, marking: Marking) -> int | PartitionsBusy:
    """Check that no partition of ``marking`` runs now and record them all (see the module's
    docstring), with the audit entry; the number of partitions marked, or what runs now."""
    busy: list[str] = []
    for part in marking.parts:
        busy.extend(_busy_partitions(conn, part))
    if busy:
        return PartitionsBusy(sorted(set(busy)))
    dialect = conn.dialect.name
    count = 0
    for part in marking.parts:
        for i in range(0, len(part.keys), CHUNK):
            keys = part.keys[i : i + CHUNK]
            conn.execute(insert(_marks), [_mark_row(marking, part.name, k) for k in keys])
            conn.execute(_states_upsert(dialect), [_state_row(marking, part.name, k) for k in keys])
            count += len(keys)
    if marking.audit is not None:
        add_audit_entries(conn, [marking.audit])
    return count


def _busy_partitions(conn: Connection, part: MarkedPart) -> list[str]:
    dialect = conn.dialect.name
    holds = (
        _backfills.c.kind == BackfillKind.ASSETS
        if part.asset
        else and_(_backfills.c.kind == BackfillKind.JOB, _backfills.c.job_name == part.name)
    )
    backfill_ids = [
        int(pk)
        for (pk,) in conn.execute(
            select(_backfills.c.id)
            .where(_backfills.c.status.in_(_UNFINISHED), holds)
            .order_by(_backfills.c.id)
            .with_for_update()
        )
    ]
    busy: list[str] = []
    for i in range(0, len(part.keys), CHUNK):
        keys = list(part.keys[i : i + CHUNK])
        if backfill_ids:
            busy.extend(_busy_slots(conn, part, backfill_ids, keys))
        rows = conn.execute(
            select(_runs.c.partition_key).where(
                _runs.c.job_name == bindparam("name"),
                one_of_list(dialect, _runs.c.partition_key, "keys"),
                _runs.c.status.in_(sorted(ACTIVE_RUN_STATES)),
            ),
            {"name": part.name, "keys": keys},
        )
        busy.extend(part.shown(str(key)) for (key,) in rows)
    return busy


def _busy_slots(
    conn: Connection, part: MarkedPart, backfill_ids: list[int], keys: list[str]
) -> list[str]:
    """The partitions of ``keys`` whose slot in one of ``backfill_ids`` is queued, running,
    or held by another transaction (a claim under way)."""
    dialect = conn.dialect.name
    slot_keys = {part.shown(k): k for k in keys}  # an asset backfill's slot: ``asset/key``
    found = conn.execute(
        select(_slots.c.id, _slots.c.partition_key, _slots.c.status).where(
            one_of_list(dialect, _slots.c.backfill_id, "ids"),
            one_of_list(dialect, _slots.c.partition_key, "keys"),
        ),
        {"ids": backfill_ids, "keys": list(slot_keys)},
    ).all()
    if not found:
        return []
    held = {int(pk) for pk, _, _ in found}
    if dialect == "postgresql":
        held = {
            int(pk)
            for (pk,) in conn.execute(
                select(_slots.c.id)
                .where(one_of_list(dialect, _slots.c.id, "ids"))
                .order_by(_slots.c.id)
                .with_for_update(skip_locked=True),
                {"ids": sorted(held)},
            )
        }
    return [
        part.shown(slot_keys[str(key)])
        for pk, key, status in found
        if int(pk) not in held or SlotState(status) in _ACTIVE_SLOTS
    ]


def _mark_row(marking: Marking, name: str, key: str) -> dict[str, object]:
    return {
        "job_name": name,
        "partition_key": key,
        "status": marking.status,
        "reason": marking.reason,
        "actor": marking.actor,
        "marked_at": marking.at,
    }


def _state_row(marking: Marking, name: str, key: str) -> dict[str, object]:
    return {
        "job_name": name,
        "partition_key": key,
        "status": marking.status.state,
        "run_id": None,
        "updated_at": marking.at,
    }


def _states_upsert(dialect: str) -> Executable:
    """The partition's latest state becomes the mark's, with no run: nothing runs it now
    (checked under the locks), so no run's end can be older than the mark."""
    ins = upsert(dialect, _states)
    statement: Executable = ins.on_conflict_do_update(
        index_elements=[_states.c.job_name, _states.c.partition_key],
        set_={
            "status": ins.excluded.status,
            "run_id": None,
            "updated_at": ins.excluded.updated_at,
        },
    )
    return statement


@dataclass(frozen=True, slots=True)
class MarkRow:
    id: int
    job_name: str
    partition_key: str
    status: MarkStatus
    reason: str
    actor: str | None
    marked_at: datetime


def marks_of(
    conn: Connection,
    job: str,
    *,
    partition_key: str | None = None,
    before_id: int | None = None,
    limit: int = 50,
) -> list[MarkRow]:
    """A job's (or asset's) marks, newest first; of one partition with ``partition_key``;
    those older than ``before_id`` with it (an index walk either way)."""
    stmt = select(
        _marks.c.id,
        _marks.c.job_name,
        _marks.c.partition_key,
        _marks.c.status,
        _marks.c.reason,
        _marks.c.actor,
        _marks.c.marked_at,
    ).where(_marks.c.job_name == job)
    if partition_key is not None:
        stmt = stmt.where(_marks.c.partition_key == partition_key)
    if before_id is not None:
        stmt = stmt.where(_marks.c.id < before_id)
    rows = conn.execute(stmt.order_by(_marks.c.id.desc()).limit(limit)).all()
    return [
        MarkRow(int(pk), str(name), str(key), MarkStatus(status), str(reason), actor, at)
        for pk, name, key, status, reason, actor, at in rows
    ]


__all__ = [
    "MarkRow",
    "MarkedPart",
    "Marking",
    "PartitionsBusy",
    "marks_of",
    "write_marks",
]
