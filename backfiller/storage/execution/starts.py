"""The start gate: right before a worker starts a run, check that it may start.

Called by a launcher's thread (synchronously, on an engine of its own) for the runs it is about
to hand to idle workers: one read checks that the daemon's lease is valid and that each run is
still QUEUED, leased to the daemon, at its attempt, and of a RUNNING backfill. ``pauseBackfill``
and ``cancelBackfill`` commit before they answer, so once they have answered no gate lets a run
of that backfill start: pause and cancel are immediate, not a matter of the next daemon tick.
A local worker reads it once for the tasks it holds and starts those let through within a
short permit (``domain.START_PERMIT_SECONDS``), which pause and cancel wait out before they
answer.
The start itself is written by the daemon with the run's other events (``RunStarted``), fenced
like every result. A read, not a write: it never waits for the daemon's writes (on SQLite it is
a WAL reader), so it costs a dispatch little.
"""

from __future__ import annotations

import contextlib
from collections.abc import Sequence
from datetime import datetime
from functools import partial
from typing import Any

from sqlalchemy import (
    Connection,
    Engine,
    Select,
    Table,
    and_,
    bindparam,
    create_engine,
    event,
    select,
)

from backfiller.domain import BackfillState, RunState
from backfiller.storage.engine import LOCK_PATIENCE_SECONDS, sync_database_url
from backfiller.storage.execution.common import backfills_t, leases_t, runs_t
from backfiller.storage.partition_routes import ByPartition
from backfiller.storage.value_lists import DIALECTS, one_of_list

Request = tuple[int, int, int | None]
"""A run asked for: its id, its attempt and its backfill's id (None: not known)."""


class StartGate:
    """Checks runs before they start, on a connection of its own (see the module's docstring).

    One thread calls it (the launcher's); it keeps one autocommit connection, so each check is
    a single statement on the latest committed state, with no checkout or transaction around.
    """

    def __init__(self, database_url: str) -> None:
        self.url = database_url
        self.engine: Engine = create_engine(sync_database_url(database_url), pool_pre_ping=True)
        self.dialect = self.engine.dialect.name
        if self.dialect == "sqlite":
            _sqlite_reader(self.engine)
        self._conn: Connection | None = None

    def start(self, owner: str, requests: Sequence[Request], now: datetime) -> set[int]:
        """The ids of the ``(run_id, attempt, backfill_id)`` runs that may start now."""
        if not requests:
            return set()
        if self._conn is None:
            self._conn = self.engine.connect().execution_options(isolation_level="AUTOCOMMIT")
        try:
            return may_start(self._conn, owner, requests, now)
        except Exception:
            self._drop()
            raise

    def _drop(self) -> None:
        conn, self._conn = self._conn, None
        if conn is not None:
            with contextlib.suppress(Exception):
                conn.close()

    def dispose(self) -> None:
        self._drop()
        self.engine.dispose()


def _may_start_query(runs: Table, backfills: bool, dialect: str) -> Select[tuple[int, int]]:
    which = one_of_list(dialect, runs.c.id, "ids")
    if backfills:
        which = and_(which, one_of_list(dialect, runs.c.backfill_id, "backfills"))
    leased = (
        select(leases_t.c.owner)
        .where(leases_t.c.owner == bindparam("owner"), leases_t.c.expires_at > bindparam("now"))
        .exists()
    )
    return (
        select(runs.c.id, runs.c.attempt)
        .join(backfills_t, backfills_t.c.id == runs.c.backfill_id)
        .where(
            which,
            runs.c.status == RunState.QUEUED,
            runs.c.lease_owner == bindparam("owner"),
            backfills_t.c.status == BackfillState.RUNNING,
            leased,
        )
    )


_MAY_START = {
    (dialect, backfills): ByPartition(
        runs_t, partial(_may_start_query, backfills=backfills, dialect=dialect)
    )
    for dialect in DIALECTS
    for backfills in (True, False)
}
"""The check of several runs, by dialect, with their backfills' ids (on PostgreSQL, of the
one partition that holds them all, or of every partition that does) or without (a launcher
that does not give them): the ids as list parameters (``storage.value_lists``), so that the
statement is the same for any number of runs (prepared once by PostgreSQL, not parsed again
for each batch size)."""


def may_start(conn: Connection, owner: str, requests: Sequence[Request], now: datetime) -> set[int]:
    """The runs of ``requests`` that may start: lease valid, run QUEUED and leased to
    ``owner`` at that attempt, backfill RUNNING."""
    attempts = {run_id: attempt for run_id, attempt, _ in requests}
    backfills = {b for *_, b in requests}
    params: dict[str, Any] = {"ids": list(attempts), "owner": owner, "now": now}
    statement = _MAY_START[(conn.dialect.name, None not in backfills)]
    prepared = statement.parent
    if None not in backfills:
        named = sorted(b for b in backfills if b is not None)
        params["backfills"] = named
        prepared = statement.of(conn, named)
    rows = prepared.rows(conn, params)
    return {int(run_id) for run_id, at in rows if attempts[int(run_id)] == int(at)}


def _sqlite_reader(engine: Engine) -> None:
    """WAL and a busy timeout: a reader that never takes the write lock."""

    @event.listens_for(engine, "connect")
    def _on_connect(dbapi_connection: Any, _record: Any) -> None:
        cursor = dbapi_connection.cursor()
        cursor.execute("PRAGMA journal_mode=WAL")
        cursor.execute(f"PRAGMA busy_timeout={int(LOCK_PATIENCE_SECONDS * 1000)}")
        cursor.close()
