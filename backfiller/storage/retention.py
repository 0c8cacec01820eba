"""Retention: deleting the history that is past its keeping, a small batch at a time.

What goes: finished backfills (a terminal status, ended before a cutoff) with everything that
is theirs (run log lines, runs, slots, events, notifications, tags, webhooks); trigger
evaluations evaluated before a cutoff (but each trigger's newest, which the triggers page
shows); audit entries before a cutoff. What stays: ``partition_states``, the summary of every
partition's history (its latest run's status and when), from which ``reprocess``, the jobs'
and assets' partition statuses and the triggers' ``partition_statuses`` are read: no read
needs the rows that go. A backfill that is not finished is never touched.

Each function deletes at most ``batch`` rows of one table, in the caller's transaction, so a
transaction is short and holds its locks for a moment: a backfill goes child table by child
table (log lines of its first runs, those runs, ... its row last), over as many transactions
as it takes. Interrupted anywhere, the next call carries on: what is left of an expired
backfill is still expired. With an :class:`~backfiller.storage.archive.Archive`, the rows a
call deletes are written to it (JSON Lines) first. Synchronous functions of a Core connection
(``Database.transact``).

On PostgreSQL a backfill in a closed range of the history (``storage.history_partitions``)
is not deleted here: the whole range goes at once, its partitions dropped with its backfills'
rows. Only the backfills outside the closed ranges go row by row.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import (
    Connection,
    Select,
    Table,
    bindparam,
    delete,
    func,
    select,
    text,
    update,
)

from backfiller.storage.archive import Archive
from backfiller.storage.auth_records import AuditRecord
from backfiller.storage.expiry import FINISHED, expired
from backfiller.storage.history_partitions import in_closed, outside_closed
from backfiller.storage.notification_records import NotificationRecord
from backfiller.storage.records import (
    BackfillEventRecord,
    BackfillRecord,
    RunLogRecord,
    RunRecord,
    SlotRecord,
    table_of,
)
from backfiller.storage.rows import changed
from backfiller.storage.trigger_records import (
    TriggerEvaluationRecord,
    TriggerLatestEvaluationRecord,
)

backfills_t = table_of(BackfillRecord)
runs_t = table_of(RunRecord)
logs_t = table_of(RunLogRecord)
slots_t = table_of(SlotRecord)
events_t = table_of(BackfillEventRecord)
notifications_t = table_of(NotificationRecord)
evaluations_t = table_of(TriggerEvaluationRecord)
latest_t = table_of(TriggerLatestEvaluationRecord)
audit_t = table_of(AuditRecord)

PRUNED_TABLES = (
    "run_logs",
    "runs",
    "slots",
    "backfill_events",
    "notifications",
    "backfills",
    "trigger_evaluations",
    "audit_log",
)
"""The tables retention deletes from, in the order a backfill's rows go."""


@dataclass(frozen=True, slots=True)
class Deleted:
    """What one call deleted: ``rows`` of ``table`` (0: nothing of that kind was left)."""

    table: str
    rows: int


def expired_backfills(conn: Connection, cutoff: datetime, limit: int) -> list[int]:
    """Finished backfills that ended before ``cutoff``, oldest end first: those outside the
    history's closed ranges (PostgreSQL), whose backfills go with their range instead."""
    outside = outside_closed(conn, backfills_t.c.id)
    statement = _EXPIRED.where(*outside) if outside else _EXPIRED
    return [int(pk) for pk in conn.execute(statement, {"cutoff": cutoff, "limit": limit}).scalars()]


def prune_backfill(
    conn: Connection, pk: int, batch: int, archive: Archive | None = None
) -> Deleted:
    """Delete at most ``batch`` rows of what the expired backfill ``pk`` still holds, children
    first; its own row once nothing else is left (``Deleted("backfills", 1)``), then
    ``Deleted("backfills", 0)``. A backfill that is not finished is left alone
    (``Deleted("backfills", 0)``)."""
    if not conn.execute(_FINISHED, {"pk": pk}).first():
        return Deleted("backfills", 0)
    if in_closed(conn, pk):
        return Deleted("backfills", 0)  # it goes with its range (``history_partitions``)
    runs = select(runs_t.c.id).where(runs_t.c.backfill_id == pk).order_by(runs_t.c.id)
    first_runs = runs.limit(batch).scalar_subquery()
    logs = select(logs_t.c.id).where(logs_t.c.run_id.in_(first_runs))
    steps: tuple[tuple[Table, Select[Any]], ...] = (
        (logs_t, logs),
        (runs_t, runs),
        (slots_t, _of_backfill(slots_t, pk)),
        (events_t, _of_backfill(events_t, pk)),
        (notifications_t, _of_backfill(notifications_t, pk)),
    )
    for table, ids in steps:
        n = _delete_ids(conn, table, ids.limit(batch), archive, pk)
        if n:
            return Deleted(table.name, n)
    # Retries of this backfill lose their link to it (their `parent` is gone).
    conn.execute(update(backfills_t).where(backfills_t.c.parent_id == pk).values(parent_id=None))
    itself = select(backfills_t.c.id).where(backfills_t.c.id == pk)
    return Deleted("backfills", _delete_ids(conn, backfills_t, itself, archive, pk))


def prune_evaluations(
    conn: Connection, cutoff: datetime, batch: int, archive: Archive | None = None
) -> Deleted:
    """Delete at most ``batch`` trigger evaluations from before ``cutoff``, oldest first; each
    trigger's newest stays."""
    ids = (
        select(evaluations_t.c.id)
        .where(
            evaluations_t.c.evaluated_at < cutoff,
            evaluations_t.c.id.not_in(select(latest_t.c.evaluation_id)),
        )
        .order_by(evaluations_t.c.evaluated_at)
        .limit(batch)
    )
    return Deleted(evaluations_t.name, _delete_ids(conn, evaluations_t, ids, archive, None))


def prune_audit(
    conn: Connection, cutoff: datetime, batch: int, archive: Archive | None = None
) -> Deleted:
    """Delete at most ``batch`` audit entries from before ``cutoff``, oldest first."""
    ids = select(audit_t.c.id).where(audit_t.c.at < cutoff).order_by(audit_t.c.at).limit(batch)
    return Deleted(audit_t.name, _delete_ids(conn, audit_t, ids, archive, None))


def count_prunable(
    conn: Connection,
    backfills_before: datetime | None,
    evaluations_before: datetime | None,
    audit_before: datetime | None,
) -> dict[str, int]:
    """How many rows of each table pruning would delete with these cutoffs (None: keep)."""
    counts = dict.fromkeys(PRUNED_TABLES, 0)
    if backfills_before is not None:
        # A closed range's backfills go with its partitions (``history_partitions``).
        expired_ids = select(backfills_t.c.id).where(
            expired(backfills_before), *outside_closed(conn, backfills_t.c.id)
        )
        runs = select(runs_t.c.id).where(runs_t.c.backfill_id.in_(expired_ids))
        for table, of_expired in (
            (logs_t, logs_t.c.run_id.in_(runs)),
            (runs_t, runs_t.c.backfill_id.in_(expired_ids)),
            (slots_t, slots_t.c.backfill_id.in_(expired_ids)),
            (events_t, events_t.c.backfill_id.in_(expired_ids)),
            (notifications_t, notifications_t.c.backfill_id.in_(expired_ids)),
        ):
            counts[table.name] = _count(conn, table, of_expired)
        counts["backfills"] = _count(conn, backfills_t, backfills_t.c.id.in_(expired_ids))
    if evaluations_before is not None:
        counts["trigger_evaluations"] = _count(
            conn,
            evaluations_t,
            evaluations_t.c.evaluated_at < evaluations_before,
            evaluations_t.c.id.not_in(select(latest_t.c.evaluation_id)),
        )
    if audit_before is not None:
        counts["audit_log"] = _count(conn, audit_t, audit_t.c.at < audit_before)
    return counts


def bytes_per_row(conn: Connection, tables: Sequence[str] = PRUNED_TABLES) -> dict[str, float]:
    """The average bytes a row of each table takes on disk, its indexes included (0 for an
    empty table): what deleting a row frees for reuse."""
    if conn.dialect.name == "postgresql":
        return _postgres_bytes(conn, tables)
    found = conn.execute(
        text(
            "SELECT m.tbl_name, SUM(s.pgsize) FROM dbstat s "
            "JOIN sqlite_master m ON m.name = s.name GROUP BY m.tbl_name"
        )
    )
    sizes = {str(name): int(size) for name, size in found}
    out: dict[str, float] = {}
    for name in tables:
        rows_in = conn.execute(text(f'SELECT COUNT(*) FROM "{name}"')).scalar_one()
        out[name] = sizes.get(name, 0) / rows_in if rows_in else 0.0
    return out


def _postgres_bytes(conn: Connection, tables: Sequence[str]) -> dict[str, float]:
    rows = conn.execute(
        text(
            # A partitioned table's rows and bytes are its partitions' (``history_partitions``).
            "SELECT c.relname, SUM(pg_total_relation_size(p.oid)), "
            "SUM(GREATEST(p.reltuples, 0)) FILTER (WHERE p.relkind = 'r') "
            "FROM pg_class c JOIN pg_class p "
            "ON p.oid = c.oid "
            "OR p.oid IN (SELECT inhrelid FROM pg_inherits WHERE inhparent = c.oid) "
            "WHERE c.relname = ANY(:tables) AND c.relkind IN ('r', 'p') GROUP BY c.relname"
        ),
        {"tables": list(tables)},
    ).all()
    out: dict[str, float] = {}
    for name, size, tuples in rows:
        size, tuples = float(size), float(tuples)
        if tuples < 1:  # never analyzed yet (a new or small table): count it
            tuples = conn.execute(text(f'SELECT COUNT(*) FROM "{name}"')).scalar_one()
        out[str(name)] = size / tuples if tuples else 0.0
    return out


def _of_backfill(table: Table, pk: int) -> Select[Any]:
    return select(table.c.id).where(table.c.backfill_id == pk).order_by(table.c.id)


def _delete_ids(
    conn: Connection, table: Table, ids: Select[Any], archive: Archive | None, owner: int | None
) -> int:
    """Delete the rows of ``table`` whose ids ``ids`` selects (archived first); how many."""
    chosen = [int(pk) for pk in conn.execute(ids).scalars()]
    if not chosen:
        return 0
    if archive is not None:
        rows = conn.execute(
            select(table).where(table.c.id.in_(bindparam("ids", expanding=True))),
            {"ids": chosen},
        ).mappings()
        archive.write(table.name, owner, chosen[0], [dict(r) for r in rows])
    result = conn.execute(
        delete(table).where(table.c.id.in_(bindparam("ids", expanding=True))), {"ids": chosen}
    )
    return changed(result)


def _count(conn: Connection, table: Table, *where: Any) -> int:
    return int(conn.execute(select(func.count()).select_from(table).where(*where)).scalar_one())


_EXPIRED = (
    select(backfills_t.c.id)
    .where(
        expired(bindparam("cutoff")),
    )
    .order_by(backfills_t.c.ended_at)
    .limit(bindparam("limit"))
)
_FINISHED = select(backfills_t.c.id).where(
    backfills_t.c.id == bindparam("pk"), backfills_t.c.status.in_(FINISHED)
)
