"""What the execution modules share: tables, counter moves and the partition-state upsert."""

from __future__ import annotations

import functools
from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence
from datetime import datetime
from typing import Any

from sqlalchemy import Integer, bindparam, insert, or_, select, text, update
from sqlalchemy.exc import DBAPIError
from sqlalchemy.ext.asyncio import AsyncSession
from sqlalchemy.orm import Session

from backfiller.domain import ACTIVE_RUN_STATES, BackfillState, RunState, SlotState
from backfiller.storage.base import UTCDateTime
from backfiller.storage.partition_routes import UNDEFINED_TABLE, ByPartition, routes_of
from backfiller.storage.prepared import Prepared
from backfiller.storage.records import (
    ActiveRunRecord,
    BackfillRecord,
    DaemonLeaseRecord,
    PartitionStateRecord,
    RunLogRecord,
    RunRecord,
    SlotRecord,
    table_of,
)
from backfiller.storage.row_arrays import arrays_of, unnested
from backfiller.storage.rows import changed
from backfiller.storage.upserts import upsert
from backfiller.storage.value_lists import DIALECTS, one_of_list

__all__ = ["changed"]

ACTIVE = sorted(ACTIVE_RUN_STATES)
CHUNK = 500

slots_t = table_of(SlotRecord)
runs_t = table_of(RunRecord)
states_t = table_of(PartitionStateRecord)
logs_t = table_of(RunLogRecord)
leases_t = table_of(DaemonLeaseRecord)
backfills_t = table_of(BackfillRecord)
active_t = table_of(ActiveRunRecord)

_COUNTERS = {
    SlotState.PENDING: "pending",
    SlotState.QUEUED: "queued",
    SlotState.RUNNING: "running",
    SlotState.SUCCEEDED: "succeeded",
    SlotState.FAILED: "failed",
    SlotState.CANCELED: "canceled",
    SlotState.SKIPPED: "skipped",
}


def unindexed(column: Any) -> Any:
    """``column`` as an expression that no index matches (``column || ''``): in an update of
    a row by its id and backfill, its status is a check, not a way in. On a partition without
    statistics yet (a new range), the index of (backfill, status, ...) costs as little as the
    primary key on paper, and PostgreSQL may walk a backfill's slots of that status for each
    row it updates."""
    return column.concat("")


def one_of(column: Any, values: Sequence[Any]) -> Any:
    """``column IN values`` spelled as ORs: usable in executemany statements (IN is not)."""
    return or_(*(column == v for v in values))


class Moves:
    """Counter deltas per backfill, from slot moves."""

    def __init__(self) -> None:
        self.deltas: dict[int, Counter[str]] = defaultdict(Counter)

    def move(self, backfill_id: int, old: SlotState, new: SlotState, n: int = 1) -> None:
        if old is new or n == 0:
            return
        delta = self.deltas[backfill_id]
        delta[_COUNTERS[old]] -= n
        delta[_COUNTERS[new]] += n


class SessionRepository:
    """A repository over one session; ``dialect`` picks PostgreSQL's locking clauses."""

    def __init__(self, session: AsyncSession) -> None:
        self.session = session
        self.dialect = session.get_bind().dialect.name

    async def run_many(self, statement: Prepared, rows: Sequence[dict[str, Any]]) -> int:
        """``statement`` for each of ``rows`` in this session's transaction (one
        ``executemany``); the rows it matched or wrote, all told."""
        if not rows:
            return 0

        def run(session: Session) -> int:
            return statement.many(session.connection(), rows)

        return await self.session.run_sync(run)

    async def backfills_of(self, run_ids: Iterable[int]) -> dict[int, int]:
        """The backfill of each of ``run_ids`` (a run no longer recorded is left out): an
        active run's from ``active_runs`` (one index, where ``runs`` on PostgreSQL needs one a
        history range), the others' from ``runs``."""
        ids = sorted(set(run_ids))
        found: dict[int, int] = {}
        for statement in (_ACTIVE_BACKFILLS, _RUN_BACKFILLS):
            rest = [i for i in ids if i not in found]
            for i in range(0, len(rest), CHUNK):
                chunk = {"b_ids": rest[i : i + CHUNK]}
                rows = await self.rows_of(statement[self.dialect], chunk)
                found.update((int(run_id), int(backfill_id)) for run_id, backfill_id in rows)
        return found

    async def update_rows(self, statement: ByPartition, rows: Sequence[dict[str, Any]]) -> int:
        """``statement`` (an UPDATE of a row by its id and its backfill's) for each of ``rows``,
        in this session's transaction; the rows it matched, all told.

        On PostgreSQL, each row's update names the partition that holds its backfill's rows
        (``storage.partition_routes``), one ``executemany`` a partition, with the generic plan
        of the statement: an update of a row by its primary key needs no plan of its own. A
        join of the rows from arrays (``storage.row_arrays``) would be planned once, but on a
        partition's statistics, which lag behind a new backfill's rows: a nested loop over
        both sides, rows squared."""
        if not rows:
            return 0
        if self.dialect != "postgresql":
            return await self.run_many(statement.parent, rows)

        def run(session: Session) -> int:
            conn = session.connection()
            routes = routes_of(conn)
            by_where: dict[str | None, list[dict[str, Any]]] = defaultdict(list)
            for row in rows:
                by_where[routes.where(conn, int(row["b_backfill"]))].append(row)
            conn.execute(_GENERIC)
            try:
                n = sum(statement.on(where).many(conn, part) for where, part in by_where.items())
            except DBAPIError as e:
                if getattr(e.orig, "sqlstate", None) == UNDEFINED_TABLE:
                    routes.forget()  # a range dropped since it was read: the next try reads
                raise
            conn.execute(_AS_BEFORE)
            return n

        return await self.session.run_sync(run)

    async def rows_of(self, statement: Prepared, params: dict[str, Any]) -> list[tuple[Any, ...]]:
        """The rows ``statement`` returns with ``params``, in this session's transaction."""

        def run(session: Session) -> list[tuple[Any, ...]]:
            return statement.rows(session.connection(), params)

        return await self.session.run_sync(run)

    async def insert_runs(self, rows: Sequence[dict[str, Any]]) -> list[int]:
        """Insert run rows (one per slot), in one multi-row statement; their ids in row order.

        The ids are matched to the rows by slot, not by asking SQLAlchemy to keep the
        parameters' order (``sort_by_parameter_order``), which on SQLite inserts row by row."""
        if not rows:
            return []
        if self.dialect == "postgresql":  # one statement, the same for any number of rows
            names = tuple(rows[0])
            statement = _runs_insert_arrays(names)
            inserted: Iterable[Any] = await self.rows_of(statement, arrays_of(rows, names))
        else:
            inserted = (
                await self.session.execute(
                    insert(runs_t).returning(runs_t.c.id, runs_t.c.slot_id), list(rows)
                )
            ).all()
        by_slot = {int(slot_id): int(run_id) for run_id, slot_id in inserted}
        return [by_slot[int(row["slot_id"])] for row in rows]

    async def apply_moves(self, moves: Moves, now: datetime) -> None:
        """Apply counter deltas to the backfill rows, in id order (the lock order)."""
        for backfill_id in sorted(moves.deltas):
            delta = {name: n for name, n in moves.deltas[backfill_id].items() if n}
            if not delta:
                continue
            names = tuple(sorted(delta))
            statement = _counters_moved(names)
            params = {f"b_{name}": n for name, n in delta.items()}
            await self.run_many(statement, [{**params, "b_pk": backfill_id, "b_now": now}])

    async def statuses_of(self, ids: Iterable[int]) -> dict[int, BackfillState]:
        found = await self.rows_of(_STATUSES[self.dialect], {"b_ids": list(ids)})
        return {int(pk): BackfillState(s) for pk, s in found}

    async def record_partition_states(
        self, states: Sequence[tuple[str, str, RunState, int]], now: datetime
    ) -> None:
        """Upsert the latest outcome of each (job, partition); an older run never wins."""
        stmt, rows = partition_states_upsert(self.dialect, states, now)
        if rows and self.dialect == "postgresql":  # one statement for all the rows
            await self.rows_of(stmt, {**arrays_of(rows, _STATE_COLUMNS), "now": now})
            return
        await self.run_many(stmt, rows)


def _newest_run_wins(ins: Any) -> Prepared:
    """The insert ``ins`` of partition states, as an upsert in which an older run never
    replaces a newer one's state."""
    return Prepared(
        ins.on_conflict_do_update(
            index_elements=[states_t.c.job_name, states_t.c.partition_key],
            set_={
                "status": ins.excluded.status,
                "run_id": ins.excluded.run_id,
                "updated_at": ins.excluded.updated_at,
            },
            where=or_(states_t.c.run_id.is_(None), states_t.c.run_id <= ins.excluded.run_id),
        )
    )


def _states_upsert(dialect: str) -> Prepared:
    """The upsert of one partition state a row."""
    return _newest_run_wins(upsert(dialect, states_t))


_GENERIC = text("SET LOCAL plan_cache_mode = force_generic_plan")
_AS_BEFORE = text("SET LOCAL plan_cache_mode = DEFAULT")
_ACTIVE_BACKFILLS = {
    dialect: Prepared(
        select(active_t.c.run_id, active_t.c.backfill_id).where(
            one_of_list(dialect, active_t.c.run_id, "b_ids")
        )
    )
    for dialect in DIALECTS
}
_RUN_BACKFILLS = {
    dialect: Prepared(
        select(runs_t.c.id, runs_t.c.backfill_id).where(one_of_list(dialect, runs_t.c.id, "b_ids"))
    )
    for dialect in DIALECTS
}
_STATE_COLUMNS = ("job_name", "partition_key", "status", "run_id")


def _states_upsert_arrays() -> Prepared:
    """PostgreSQL: the upsert of :func:`_states_upsert` for all the rows at once, given as one
    array per column (``storage.row_arrays``)."""
    rows = unnested(*((name, states_t.c[name].type) for name in _STATE_COLUMNS))
    ins = upsert("postgresql", states_t).from_select(
        [*_STATE_COLUMNS, "updated_at"],
        select(*(rows.c[name] for name in _STATE_COLUMNS), bindparam("now", type_=UTCDateTime())),
    )
    return _newest_run_wins(ins)


@functools.cache
def _runs_insert_arrays(names: tuple[str, ...]) -> Prepared:
    """PostgreSQL: the insert of run rows with the columns ``names``, all the rows at once,
    given as one array per column (``storage.row_arrays``); returns each one's id and slot.
    Built once per shape (two: with and without the ranged runs' columns)."""
    rows = unnested(*((name, runs_t.c[name].type) for name in names))
    return Prepared(
        insert(runs_t)
        .from_select(list(names), select(*(rows.c[name] for name in names)))
        .returning(runs_t.c.id, runs_t.c.slot_id)
    )


@functools.cache
def _counters_moved(names: tuple[str, ...]) -> Prepared:
    """The update of a backfill's counters ``names``, each by its parameter ``b_<name>``.
    Built once per set of counters (a few)."""
    return Prepared(
        update(backfills_t)
        .where(backfills_t.c.id == bindparam("b_pk"))
        .values(
            {
                **{
                    backfills_t.c[name]: backfills_t.c[name] + bindparam(f"b_{name}", type_=Integer)
                    for name in names
                },
                backfills_t.c.updated_at: bindparam("b_now"),
                backfills_t.c.version: backfills_t.c.version + 1,
            }
        )
    )


_STATES_UPSERT = {"sqlite": _states_upsert("sqlite"), "postgresql": _states_upsert_arrays()}
"""The partition states' upsert: a row a statement on SQLite (``executemany``), every row in
one statement on PostgreSQL (arrays: ``storage.row_arrays``)."""
_STATUSES = {
    dialect: Prepared(
        select(backfills_t.c.id, backfills_t.c.status).where(
            one_of_list(dialect, backfills_t.c.id, "b_ids")
        )
    )
    for dialect in DIALECTS
}


def partition_states_upsert(
    dialect: str, states: Sequence[tuple[str, str, RunState, int]], now: datetime
) -> tuple[Prepared, list[dict[str, Any]]]:
    """The upsert of the latest run state per (job, partition), and its parameter rows."""
    latest: dict[tuple[str, str], tuple[RunState, int]] = {}
    for job, key, state, run_id in states:
        seen = latest.get((job, key))
        if seen is None or seen[1] <= run_id:
            latest[(job, key)] = (state, run_id)
    stmt = _STATES_UPSERT[dialect]
    rows = [
        {
            "job_name": job,
            "partition_key": key,
            "status": state,
            "run_id": run_id,
            "updated_at": now,
        }
        for (job, key), (state, run_id) in latest.items()
    ]
    return stmt, rows
