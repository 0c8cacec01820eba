"""The start gate: runs move QUEUED -> RUNNING right before a worker starts them.

Called by a launcher's thread (synchronously, on its own engine) for the runs it is about to
hand to idle workers. One transaction checks the daemon's lease, locks the runs and then their
backfill rows (the documented lock order: runs and slots first, backfill rows last) and starts
only the runs whose backfill is RUNNING. ``pauseBackfill`` and ``cancelBackfill`` update that
backfill row, so once they have committed no gate starts a run of it: pause and cancel are
immediate, not a matter of the next daemon tick.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from datetime import datetime
from typing import Any

from sqlalchemy import Connection, Engine, bindparam, create_engine, event, select, update

from backfiller.domain import BackfillState, RunState, SlotState, run_sources_of
from backfiller.storage.engine import LOCK_PATIENCE_SECONDS, sync_database_url
from backfiller.storage.execution.common import (
    backfills_t,
    leases_t,
    one_of,
    partition_states_upsert,
    runs_t,
    slots_t,
)

STARTS_FROM = run_sources_of(RunState.RUNNING)


class StartGate:
    """Starts runs in the database for a launcher (see the module's docstring)."""

    def __init__(self, database_url: str) -> None:
        self.engine: Engine = create_engine(sync_database_url(database_url), pool_pre_ping=True)
        self.dialect = self.engine.dialect.name
        if self.dialect == "sqlite":
            _immediate_sqlite(self.engine)

    def start(
        self, owner: str, requests: Sequence[tuple[int, int, str]], now: datetime
    ) -> set[int]:
        """Start the ``(run_id, attempt, worker)`` runs that may start; return their ids."""
        if not requests:
            return set()
        with self.engine.begin() as conn:
            return _start(conn, self.dialect, owner, requests, now)

    def dispose(self) -> None:
        self.engine.dispose()


def _start(
    conn: Connection,
    dialect: str,
    owner: str,
    requests: Sequence[tuple[int, int, str]],
    now: datetime,
) -> set[int]:
    pg = dialect == "postgresql"
    lease = select(leases_t.c.owner).where(leases_t.c.owner == owner, leases_t.c.expires_at > now)
    if conn.execute(lease.with_for_update(read=True) if pg else lease).first() is None:
        return set()
    wanted = {run_id: (attempt, worker) for run_id, attempt, worker in requests}
    runs = (
        select(
            runs_t.c.id,
            runs_t.c.slot_id,
            runs_t.c.backfill_id,
            runs_t.c.job_name,
            runs_t.c.partition_key,
            runs_t.c.attempt,
        )
        .where(
            runs_t.c.id.in_(list(wanted)),
            runs_t.c.status.in_(STARTS_FROM),
            runs_t.c.lease_owner == owner,
        )
        .order_by(runs_t.c.id)
    )
    rows = [
        r
        for r in conn.execute(runs.with_for_update() if pg else runs)
        if r.attempt == wanted[r.id][0]
    ]
    if not rows:
        return set()
    backfills = (
        select(backfills_t.c.id, backfills_t.c.status)
        .where(backfills_t.c.id.in_({r.backfill_id for r in rows}))
        .order_by(backfills_t.c.id)
    )
    running = {
        pk
        for pk, status in conn.execute(backfills.with_for_update() if pg else backfills)
        if BackfillState(status) is BackfillState.RUNNING
    }
    rows = [r for r in rows if r.backfill_id in running]
    if rows:
        _write_starts(conn, dialect, rows, wanted, now)
    return {int(r.id) for r in rows}


def _write_starts(
    conn: Connection,
    dialect: str,
    rows: list[Any],
    wanted: dict[int, tuple[int, str]],
    now: datetime,
) -> None:
    conn.execute(
        update(runs_t)
        .where(runs_t.c.id == bindparam("b_id"), one_of(runs_t.c.status, STARTS_FROM))
        .values(
            status=RunState.RUNNING,
            started_at=now,
            heartbeat_at=now,
            worker=bindparam("b_worker"),
        ),
        [{"b_id": r.id, "b_worker": wanted[r.id][1]} for r in rows],
    )
    conn.execute(
        update(slots_t)
        .where(slots_t.c.id == bindparam("b_id"), slots_t.c.status == SlotState.QUEUED)
        .values(status=SlotState.RUNNING, updated_at=now),
        [{"b_id": r.slot_id} for r in rows],
    )
    stmt, states = partition_states_upsert(
        dialect, [(r.job_name, r.partition_key, RunState.RUNNING, int(r.id)) for r in rows], now
    )
    conn.execute(stmt, states)
    per_backfill = Counter(int(r.backfill_id) for r in rows)
    for pk in sorted(per_backfill):
        n = per_backfill[pk]
        conn.execute(
            update(backfills_t)
            .where(backfills_t.c.id == pk)
            .values(
                queued=backfills_t.c.queued - n,
                running=backfills_t.c.running + n,
                updated_at=now,
                version=backfills_t.c.version + 1,
            )
        )


def _immediate_sqlite(engine: Engine) -> None:
    """WAL, a busy timeout and ``BEGIN IMMEDIATE``: the gate queues behind other writers."""

    @event.listens_for(engine, "connect")
    def _on_connect(dbapi_connection: Any, _record: Any) -> None:
        dbapi_connection.isolation_level = None
        cursor = dbapi_connection.cursor()
        cursor.execute("PRAGMA journal_mode=WAL")
        cursor.execute(f"PRAGMA busy_timeout={int(LOCK_PATIENCE_SECONDS * 1000)}")
        cursor.execute("PRAGMA foreign_keys=ON")
        cursor.close()

    @event.listens_for(engine, "begin")
    def _on_begin(conn: Any) -> None:
        conn.exec_driver_sql("BEGIN IMMEDIATE")
