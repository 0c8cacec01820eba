"""Partitioned history on PostgreSQL: runs, slots, log lines and events by backfill id ranges.

``runs``, ``slots``, ``run_logs`` and ``backfill_events`` are declaratively partitioned by
``RANGE (backfill_id)`` (migrations 0049 and 0050): each range partition holds the rows of a
run of consecutive backfills, about a day's launches (:data:`PERIOD`), and a ``DEFAULT``
partition catches whatever falls outside the ranges made so far, so that no write ever fails
for want of one. Backfill ids grow with time, so a range is a span of time, and retention
prunes whole backfills: a range is dropped, its four partitions and its backfills' own rows in
one transaction, exactly when the ids it covers have all been handed out and none of its
backfills is kept any longer (one read of ``backfills``' primary key says so). Dropping a
partition frees its files at once, with no dead rows to vacuum: that is what partitioning is
for at millions of runs a day.

The daemons make the next range ahead of time (:func:`make_ahead`): once the newest range is
in use, a new one starts above every backfill id handed out so far, so the ``DEFAULT``
partition has nothing to move and stays empty. Ranges are read from the catalog, the one
truth (``pg_inherits`` and each partition's bound); partitions are named ``<table>_b<low>``.

SQLite keeps plain tables: every function here is for PostgreSQL and is not called on SQLite
(:func:`partitioned` says whether a database has the ranges). Synchronous functions of a Core
connection (``Database.transact``), in the caller's transaction.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import ColumnElement, Connection, and_, func, not_, select, text, update
from sqlalchemy.exc import DBAPIError

from backfiller.storage.archive import Archive
from backfiller.storage.expiry import backfills_t, expired
from backfiller.storage.records import ActiveRunRecord, table_of

active_t = table_of(ActiveRunRecord)

PARTITIONED = ("run_logs", "backfill_events", "runs", "slots")
"""The tables partitioned by backfill id ranges, each with the same ranges."""
PERIOD = timedelta(days=1)
"""A new range covers as many backfills as were launched in the last period."""
MIN_SPAN = 1000
"""The fewest backfill ids a new range covers."""
_INSERTED = (
    "autovacuum_vacuum_insert_scale_factor = 0.02, autovacuum_vacuum_insert_threshold = 10000, "
    "autovacuum_analyze_scale_factor = 0.02, autovacuum_analyze_threshold = 10000"
)
_UPDATED = (
    "autovacuum_vacuum_scale_factor = 0.01, autovacuum_vacuum_threshold = 1000, "
    "autovacuum_analyze_scale_factor = 0.02, autovacuum_analyze_threshold = 1000, "
    "autovacuum_vacuum_insert_scale_factor = 0.02"
)
PARTITION_SETTINGS = {
    "run_logs": _INSERTED,
    "backfill_events": _INSERTED,
    "runs": f"fillfactor = 80, {_UPDATED}",
    "slots": f"fillfactor = 90, {_UPDATED}",
}
"""Each partition's storage settings, by table: migration 0015 set them on the tables before
they were partitioned (insert-only tables vacuumed for their visibility maps; room on each
page of the updated ones for HOT updates, and autovacuum long before a fifth of the rows are
dead)."""
LOCK_TIMEOUT = "200ms"
"""How long dropping a range waits for the tables' lock before giving up until the next try:
while it waits, every read and write of the table queues behind it (and a daemon's loop waits
for its retention tick)."""

LOCK_NOT_AVAILABLE = "55P03"
_BOUND = re.compile(r"FROM \('?(-?\d+)'?\) TO \('?(-?\d+)'?\)")
_PARTITION = re.compile(rf"({'|'.join(PARTITIONED)})_(b\d+|default)")


@dataclass(frozen=True, slots=True, order=True)
class Range:
    """Backfill ids ``low`` (included) to ``high`` (excluded)."""

    low: int
    high: int

    def name(self, table: str) -> str:
        return f"{table}_b{self.low}"

    def __contains__(self, backfill_id: int) -> bool:
        return self.low <= backfill_id < self.high

    def holds(self, backfill_id: Any) -> ColumnElement[bool]:
        """That ``backfill_id`` (a column) is in this range, in SQL."""
        return and_(backfill_id >= self.low, backfill_id < self.high)


@dataclass(frozen=True, slots=True)
class Dropped:
    """A range whose partitions were dropped (or would be): their rows and bytes, by table,
    and the rows of its backfills (``rows["backfills"]``)."""

    range: Range
    rows: dict[str, int]
    bytes: dict[str, int]
    backfills: tuple[int, ...] = ()
    """The backfills deleted with the range (when it was dropped)."""


def is_partition(name: str | None) -> bool:
    """Whether ``name`` is one of the history's partitions (not in the models' metadata: the
    migrations' comparison with the models leaves them out)."""
    return name is not None and _PARTITION.fullmatch(name) is not None


def partitioned(conn: Connection) -> bool:
    """Whether this database keeps its history in ranges (PostgreSQL, migrated)."""
    if conn.dialect.name != "postgresql":
        return False
    kind = conn.execute(
        text("SELECT relkind FROM pg_class WHERE oid = to_regclass(:t)"), {"t": PARTITIONED[0]}
    ).scalar()
    return kind == "p"


def ranges(conn: Connection) -> list[Range]:
    """The range partitions of the history, lowest first (the ``DEFAULT`` one left out)."""
    bounds = conn.execute(
        text(
            "SELECT pg_get_expr(c.relpartbound, c.oid) FROM pg_inherits i "
            "JOIN pg_class c ON c.oid = i.inhrelid WHERE i.inhparent = to_regclass(:t)"
        ),
        {"t": PARTITIONED[0]},
    ).scalars()
    found = [_BOUND.search(str(bound)) for bound in bounds]
    return sorted(Range(int(m.group(1)), int(m.group(2))) for m in found if m)


def closed(conn: Connection) -> list[Range]:
    """The ranges whose every id is handed out, lowest first: no backfill will come to them.
    Retention leaves their backfills to :func:`drop_range` (none on SQLite, or before the
    migration)."""
    if not partitioned(conn):
        return []
    handed = handed_out(conn)
    return [r for r in ranges(conn) if r.high - 1 <= handed]


def outside_closed(conn: Connection, backfill_id: Any) -> list[ColumnElement[bool]]:
    """Conditions that ``backfill_id`` (a column) is in none of the :func:`closed` ranges:
    the backfills that retention deletes row by row (those in the range in use, or beyond
    the ranges made), all of them on SQLite."""
    return [not_(r.holds(backfill_id)) for r in closed(conn)]


def in_closed(conn: Connection, backfill_id: int) -> bool:
    """Whether ``backfill_id`` is in one of the :func:`closed` ranges (its rows go with it)."""
    return any(backfill_id in r for r in closed(conn))


def handed_out(conn: Connection) -> int:
    """The highest backfill id handed out so far (0: none), committed or not."""
    last, called = conn.execute(text("SELECT last_value, is_called FROM backfills_id_seq")).one()
    return int(last) if called else int(last) - 1


def make_ahead(conn: Connection, now: datetime) -> Range | None:
    """Make the next range if the newest one is in use (the range made, or None).

    The new range starts above every id handed out, and the ``DEFAULT`` partition receives
    rows only of ids no range covered when they were written: attaching the new range finds
    none of its own there. Daemons making ranges at once are serialized by a lock."""
    conn.execute(text("SELECT pg_advisory_xact_lock(hashtext('backfiller history ranges'))"))
    made, handed = ranges(conn), handed_out(conn)
    if made and made[-1].low > handed:
        return None  # none of the newest range's ids is handed out: a whole range is ahead
    low = max(made[-1].high if made else 0, handed + 1)
    launched = conn.execute(
        text("SELECT count(*) FROM backfills WHERE created_at >= :since"), {"since": now - PERIOD}
    ).scalar_one()
    new = Range(low, low + max(MIN_SPAN, int(launched)))
    create_range(conn, new)
    return new


def create_range(conn: Connection, new: Range) -> None:
    """Create ``new``'s partition of each table (empty tables attached: the parents are
    locked only as ``ATTACH`` needs, writes go on)."""
    for table in PARTITIONED:
        name = new.name(table)
        conn.execute(text(f"CREATE TABLE {name} (LIKE {table} INCLUDING DEFAULTS)"))
        conn.execute(text(f"ALTER TABLE {name} SET ({PARTITION_SETTINGS[table]})"))
        conn.execute(
            text(
                f"ALTER TABLE {table} ATTACH PARTITION {name} "
                f"FOR VALUES FROM ({new.low}) TO ({new.high})"
            )
        )


def droppable(conn: Connection, cutoff: datetime) -> list[Range]:
    """The ranges whose every id is handed out and none of whose backfills is kept: each has
    ended (a terminal status) before ``cutoff``, or is gone already."""
    out: list[Range] = []
    for r in closed(conn):
        kept = conn.execute(
            select(backfills_t.c.id)
            .where(r.holds(backfills_t.c.id), not_(expired(cutoff)))
            .limit(1)
        ).first()
        if kept is None:
            out.append(r)
    return out


def measure_droppable(conn: Connection, cutoff: datetime) -> list[Dropped]:
    """The ranges :func:`droppable` finds, with what each holds (none on SQLite)."""
    if not partitioned(conn):
        return []
    return [measure(conn, r) for r in droppable(conn, cutoff)]


def measure(conn: Connection, r: Range) -> Dropped:
    """The rows (as the statistics estimate them, or counted when never analyzed) and bytes
    of ``r``'s partitions."""
    rows: dict[str, int] = {}
    size: dict[str, int] = {}
    for table in PARTITIONED:
        name = r.name(table)
        tuples, total = conn.execute(
            text(
                "SELECT c.reltuples, pg_total_relation_size(c.oid) FROM pg_class c "
                "WHERE c.oid = to_regclass(:name)"
            ),
            {"name": name},
        ).one()
        if tuples < 0:  # never analyzed
            tuples = conn.execute(text(f"SELECT count(*) FROM {name}")).scalar_one()
        rows[table], size[table] = int(tuples), int(total)
    rows["backfills"] = conn.execute(
        select(func.count()).select_from(backfills_t).where(r.holds(backfills_t.c.id))
    ).scalar_one()
    return Dropped(r, rows, size)


def drop_range(conn: Connection, r: Range) -> Dropped | None:
    """Drop ``r``'s partitions, and delete its backfills' rows (their tags, notifications and
    list entries with them: foreign keys that cascade) in the same transaction, so that no
    backfill is ever seen without its runs; what they held, or None if the tables' lock was
    not had within :data:`LOCK_TIMEOUT` (the next try takes it)."""
    gone = measure(conn, r)
    conn.execute(text(f"SET LOCAL lock_timeout = '{LOCK_TIMEOUT}'"))
    try:
        with conn.begin_nested():
            for table in PARTITIONED:
                conn.execute(text(f"DROP TABLE {r.name(table)}"))
            # ``active_runs`` mirrors ``runs``: none of a finished backfill's runs is active,
            # but the mirror must never name a run that is gone.
            conn.execute(active_t.delete().where(r.holds(active_t.c.backfill_id)))
            # Retries of its backfills lose their link to them (their ``parent`` is gone).
            parent = backfills_t.c.parent_id
            conn.execute(update(backfills_t).where(r.holds(parent)).values(parent_id=None))
            deleted = conn.execute(
                backfills_t.delete().where(r.holds(backfills_t.c.id)).returning(backfills_t.c.id)
            ).scalars()
            ids = tuple(sorted(int(pk) for pk in deleted))
    except DBAPIError as exc:
        if getattr(exc.orig, "sqlstate", None) != LOCK_NOT_AVAILABLE:
            raise
        return None  # busy: tried again later
    return Dropped(gone.range, gone.rows, gone.bytes, ids)


ARCHIVED = (*PARTITIONED, "notifications", "backfills")
"""What a range's archive holds, table by table: its partitions, then its backfills' rows."""


def archive_batch(
    conn: Connection, r: Range, table: str, after: int, batch: int, archive: Archive
) -> int | None:
    """Write up to ``batch`` rows of ``r``'s partition of ``table`` (or, for the tables that
    are not partitioned, its backfills' rows there) with ids above ``after`` to ``archive`` (a
    file per backfill, as retention writes them); the last id written, or None once there are
    no more."""
    if table in PARTITIONED:
        source, owner = f"{r.name(table)} WHERE", "backfill_id"
    else:
        owner = "id" if table == "backfills" else "backfill_id"
        source = f"{table} WHERE {owner} >= {r.low} AND {owner} < {r.high} AND"
    rows = (
        conn.execute(
            text(f"SELECT * FROM {source} id > :after ORDER BY id LIMIT :n"),
            {"after": after, "n": batch},
        )
        .mappings()
        .all()
    )
    by_backfill: dict[int, list[dict[str, Any]]] = {}
    for row in rows:
        by_backfill.setdefault(int(row[owner]), []).append(dict(row))
    for backfill_id, of_it in by_backfill.items():
        archive.write(table, backfill_id, int(of_it[0]["id"]), of_it)
    return int(rows[-1]["id"]) if len(rows) == batch else None
