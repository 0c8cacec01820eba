"""SQLite on the event loop's own thread, behind SQLAlchemy's asyncio API.

aiosqlite runs every statement on a helper thread and wakes the event loop for each result;
for the short statements of an API request that hand-off costs more than SQLite itself (a
one-row insert takes tens of microseconds, the round trip through the thread about half a
millisecond). This module gives SQLAlchemy's ``sqlite+aiosqlite`` dialect a connection with
aiosqlite's shape whose coroutines run ``sqlite3`` calls directly and so never suspend.

Never blocking the loop on a lock is the other half: the connection asks SQLite not to wait
for locks (``busy_timeout`` 0) and, when another connection or process holds the lock, waits
with ``asyncio.sleep`` and tries again, so other requests go on meanwhile. A statement that
failed with ``SQLITE_BUSY`` did nothing, so trying it again is safe. The WAL checkpoint,
which syncs the disk, moves to a background thread (``WalCheckpointer``).
"""

from __future__ import annotations

import asyncio
import logging
import sqlite3
import threading
from collections.abc import Callable, Iterable
from typing import Any

logger = logging.getLogger("backfiller.storage")

BUSY_FIRST_WAIT = 0.0001
BUSY_LONGEST_WAIT = 0.004


def is_busy(error: sqlite3.OperationalError) -> bool:
    """Whether SQLite refused a statement because another connection holds a lock (the
    statement did nothing, so it may run again)."""
    code = getattr(error, "sqlite_errorcode", None)
    if code is not None:
        return (code & 0xFF) in (sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED)
    return "locked" in str(error) or "busy" in str(error)


async def _retry_busy(call: Callable[[], Any], patience: float) -> Any:
    """``call()``, again after a short async wait for as long as SQLite says it is busy."""
    try:
        return call()
    except sqlite3.OperationalError as error:
        if not is_busy(error):
            raise
    loop = asyncio.get_running_loop()
    deadline = loop.time() + patience
    wait = BUSY_FIRST_WAIT
    while True:
        await asyncio.sleep(wait)
        try:
            return call()
        except sqlite3.OperationalError as error:
            if not is_busy(error) or loop.time() >= deadline:
                raise
        wait = min(wait * 2, BUSY_LONGEST_WAIT)


class InlineCursor:
    """An aiosqlite-shaped cursor over a ``sqlite3`` cursor."""

    def __init__(self, owner: InlineConnection, cursor: sqlite3.Cursor) -> None:
        self._owner = owner
        self._cursor = cursor
        self._patience = owner.patience

    async def __aenter__(self) -> InlineCursor:
        return self

    async def __aexit__(self, *_exc: object) -> None:
        self._cursor.close()

    async def execute(self, sql: str, parameters: Any = None) -> InlineCursor:
        await self._owner.begin_if_asked()
        if parameters is None:
            await _retry_busy(lambda: self._cursor.execute(sql), self._patience)
        else:
            await _retry_busy(lambda: self._cursor.execute(sql, parameters), self._patience)
        return self

    async def executemany(self, sql: str, parameters: Iterable[Any]) -> InlineCursor:
        rows = list(parameters)
        await self._owner.begin_if_asked()
        await _retry_busy(lambda: self._cursor.executemany(sql, rows), self._patience)
        return self

    async def fetchone(self) -> Any:
        return self._cursor.fetchone()

    async def fetchmany(self, size: int | None = None) -> list[Any]:
        if size is None:
            return self._cursor.fetchmany()
        return self._cursor.fetchmany(size)

    async def fetchall(self) -> list[Any]:
        return self._cursor.fetchall()

    async def close(self) -> None:
        self._cursor.close()

    @property
    def description(self) -> Any:
        return self._cursor.description

    @property
    def rowcount(self) -> int:
        return self._cursor.rowcount

    @property
    def lastrowid(self) -> int | None:
        return self._cursor.lastrowid

    @property
    def arraysize(self) -> int:
        return self._cursor.arraysize

    @arraysize.setter
    def arraysize(self, value: int) -> None:
        self._cursor.arraysize = value


class _RunNow:
    """Stands in for aiosqlite's request queue, which SQLAlchemy uses to set the isolation
    level: the request runs at once and its future is resolved."""

    def put_nowait(self, item: tuple[asyncio.Future[Any], Callable[[], Any]]) -> None:
        future, function = item
        try:
            future.set_result(function())
        except Exception as error:  # handed to the awaiting caller, as aiosqlite does
            future.set_exception(error)


class InlineConnection:
    """An aiosqlite-shaped connection whose calls run on the calling (event loop) thread."""

    def __init__(self, conn: sqlite3.Connection, patience: float) -> None:
        self._conn = conn
        self.patience = patience
        self._tx = _RunNow()
        self._begin: str | None = None

    def begin_with(self, statement: str) -> None:
        """Open the transaction with ``statement`` (say ``BEGIN IMMEDIATE``) just before its
        first statement: one call to SQLite instead of a statement of SQLAlchemy's own."""
        self._begin = statement

    async def begin_if_asked(self) -> None:
        statement, self._begin = self._begin, None
        if statement is not None and not self._conn.in_transaction:
            await _retry_busy(lambda: self._conn.execute(statement), self.patience)

    @property
    def begin_pending(self) -> bool:
        """Whether the transaction's ``BEGIN`` is still to run (``begin_if_asked``)."""
        return self._begin is not None and not self._conn.in_transaction

    def plain_cursor(self) -> sqlite3.Cursor:
        """A ``sqlite3`` cursor to call directly, without a coroutine per call: for a caller
        that has run ``begin_if_asked`` and that hands a busy statement to ``retry_busy``."""
        return self._conn.cursor()

    async def retry_busy(self, call: Callable[[], Any]) -> Any:
        """``call()`` again, after short waits, while SQLite says the database is busy."""
        return await _retry_busy(call, self.patience)

    @property
    def _connection(self) -> sqlite3.Connection | None:
        return self._conn

    @property
    def isolation_level(self) -> str | None:
        # SQLAlchemy sets it through ``_tx`` on ``_conn``, as it does with aiosqlite.
        return self._conn.isolation_level

    def cursor(self) -> InlineCursor:
        return InlineCursor(self, self._conn.cursor())

    async def commit(self) -> None:
        self._begin = None
        await _retry_busy(self._conn.commit, self.patience)

    async def rollback(self) -> None:
        self._begin = None
        self._conn.rollback()

    async def close(self) -> None:
        self._conn.close()

    def stop(self) -> None:
        self._conn.close()

    async def create_function(self, *args: Any, **kwargs: Any) -> None:
        self._conn.create_function(*args, **kwargs)


def inline_connector(database: str, patience: float) -> Callable[[], Any]:
    """An ``async_creator`` for ``create_async_engine``: inline connections to ``database``.

    ``patience`` is how long, in seconds, a statement waits for a lock held elsewhere.
    """

    async def connect() -> InlineConnection:
        conn = sqlite3.connect(database, check_same_thread=False, isolation_level=None)
        conn.execute("PRAGMA busy_timeout=0")
        return InlineConnection(conn, patience)

    return connect


class WalCheckpointer:
    """Copies the write-ahead log into the database file from a background thread.

    SQLite's automatic checkpoint runs inside the commit that crosses its threshold and syncs
    the disk: with it, one launch in a hundred pays for many. Inline connections turn it off
    (``PRAGMA wal_autocheckpoint=0``) and this thread checkpoints every ``every`` seconds
    instead, in ``PASSIVE`` mode, which never waits for readers or writers. Several processes
    on one database may each run one; SQLite serializes checkpoints.
    """

    def __init__(self, database: str, every: float = 1.0) -> None:
        self._database = database
        self._every = every
        self._stop = threading.Event()
        self._thread = threading.Thread(
            target=self._run, name="backfiller-wal-checkpoint", daemon=True
        )

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(timeout=5)

    def _run(self) -> None:
        conn: sqlite3.Connection | None = None
        try:
            while not self._stop.wait(self._every):
                try:
                    if conn is None:
                        conn = sqlite3.connect(self._database, isolation_level=None)
                        conn.execute("PRAGMA busy_timeout=1000")
                    conn.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchall()
                except sqlite3.Error:
                    logger.warning("WAL checkpoint of %s failed", self._database, exc_info=True)
        finally:
            if conn is not None:
                conn.close()
