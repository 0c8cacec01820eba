"""Engines and transactions. The session lifecycle lives here, outside the data functions."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, TypeVar

from sqlalchemy import Connection, event
from sqlalchemy.engine import make_url
from sqlalchemy.ext.asyncio import (
    AsyncEngine,
    AsyncSession,
    async_sessionmaker,
    create_async_engine,
)
from sqlalchemy.util import greenlet_spawn

from backfiller.config import fast_paths_from_env, log_store_from_env
from backfiller.storage.greenlets import run_sync
from backfiller.storage.inline_sqlite import WalCheckpointer, inline_connector
from backfiller.storage.log_store import log_store_of
from backfiller.storage.prepared import PREPARED

T = TypeVar("T")
I = TypeVar("I")  # noqa: E741 (an item of a batch)

Batch = Callable[[Connection, Sequence[I]], Sequence[T]]
"""Runs several items in the caller's transaction: ``batch(connection, items)`` returns each
item's result, in order, as ``batch(connection, [item])`` would have (see
``Database.transact_batched``)."""

DEFAULT_SQLITE_PATH = Path(".backfiller") / "backfiller.db"


def normalize_database_url(url: str | None) -> str:
    """Turn what a user typed into an async SQLAlchemy URL.

    ``None`` means the embedded default (SQLite under ``./.backfiller/``); ``postgresql://``
    and ``postgresql+psycopg://`` both mean psycopg 3; ``sqlite:///x.db`` means aiosqlite.
    """
    if not url:
        DEFAULT_SQLITE_PATH.parent.mkdir(parents=True, exist_ok=True)
        return f"sqlite+aiosqlite:///{DEFAULT_SQLITE_PATH}"
    parsed = make_url(url)
    backend = parsed.get_backend_name()
    if backend == "sqlite":
        database = parsed.database
        if database and database != ":memory:":
            Path(database).expanduser().parent.mkdir(parents=True, exist_ok=True)
        return parsed.set(drivername="sqlite+aiosqlite").render_as_string(hide_password=False)
    if backend in ("postgresql", "postgres"):
        return parsed.set(drivername="postgresql+psycopg").render_as_string(hide_password=False)
    raise ValueError(f"unsupported database {backend!r}: use sqlite or postgresql")


DRIVER_MODULES = {
    "sqlite": ("sqlalchemy.dialects.sqlite",),
    "postgresql": ("sqlalchemy.dialects.postgresql.psycopg", "psycopg"),
}
"""The modules of each backend's driver, as a process that connects to it imports them."""


def backend_name(url: str | None) -> str:
    """The database of ``url`` (``sqlite``, ``postgresql``), read as
    :func:`normalize_database_url` reads it (None: the embedded SQLite default)."""
    return make_url(normalize_database_url(url)).get_backend_name()


def driver_modules(url: str | None) -> tuple[str, ...]:
    """The driver modules of the database at ``url`` (None: the embedded SQLite default)."""
    return DRIVER_MODULES[backend_name(url)]


def sync_database_url(url: str) -> str:
    """The synchronous twin of an async URL (for Alembic)."""
    parsed = make_url(normalize_database_url(url))
    if parsed.get_backend_name() == "sqlite":
        return parsed.set(drivername="sqlite+pysqlite").render_as_string(hide_password=False)
    return parsed.render_as_string(hide_password=False)


LOCK_PATIENCE_SECONDS = 30.0

SQLITE_JOURNAL = ("PRAGMA journal_mode=WAL", "PRAGMA synchronous=NORMAL")
"""The journal of every SQLite connection of the service, and of its migrations."""


def _sqlite_engine(
    url: str, *, echo: bool, inline: bool, pool_size: int, options: dict[str, Any]
) -> AsyncEngine:
    """An engine of a SQLite file: inline on the event loop's thread, or through aiosqlite's."""
    if not inline:
        return create_async_engine(url, echo=echo, execution_options=options)
    database = make_url(url).database or ":memory:"
    return create_async_engine(
        url,
        echo=echo,
        execution_options=options,
        async_creator=inline_connector(database, LOCK_PATIENCE_SECONDS),
        pool_size=pool_size,
        max_overflow=0,
        pool_timeout=LOCK_PATIENCE_SECONDS,
    )


def _configure_sqlite(engine: AsyncEngine, *, immediate: bool, inline: bool) -> None:
    # An inline connection waits for locks itself, without blocking the event loop.
    busy_timeout = 0 if inline else int(LOCK_PATIENCE_SECONDS * 1000)

    @event.listens_for(engine.sync_engine, "connect")
    def _on_connect(dbapi_connection: Any, _record: Any) -> None:
        # Let SQLAlchemy, not the driver, decide when transactions begin.
        dbapi_connection.isolation_level = None
        cursor = dbapi_connection.cursor()
        for pragma in SQLITE_JOURNAL:
            cursor.execute(pragma)
        cursor.execute(f"PRAGMA busy_timeout={busy_timeout}")
        if inline:
            # The Database's WalCheckpointer checkpoints, off the event loop.
            cursor.execute("PRAGMA wal_autocheckpoint=0")
        cursor.execute("PRAGMA foreign_keys=ON")
        cursor.close()

    begin = "BEGIN IMMEDIATE" if immediate else "BEGIN"

    @event.listens_for(engine.sync_engine, "begin")
    def _on_begin(conn: Any) -> None:
        if inline:
            conn.connection.driver_connection.begin_with(begin)
        else:
            conn.exec_driver_sql(begin)


class Database:
    """Owns the engines of one database and hands out transactions.

    ``write()`` opens a transaction that may write. On SQLite it takes the write lock up front
    (``BEGIN IMMEDIATE``) so two writers queue instead of failing on lock upgrade. ``read()``
    opens a transaction for reading only (no lock on SQLite's WAL).

    SQLite runs ``inline`` by default: statements run on the event loop's thread (see
    ``inline_sqlite``), and the writers of one process queue for a single write connection.
    ``inline=False`` runs them on aiosqlite's threads instead.

    ``fast_paths`` (default: ``BACKFILLER_FAST_PATHS``, see ``Settings.fast_paths``) runs the
    synchronous core on reused greenlets (``greenlets.py``) and the hot statements prepared
    (``prepared.py``); off, on SQLAlchemy's ``greenlet_spawn`` and ``Connection.execute``.
    """

    def __init__(
        self,
        url: str | None,
        *,
        echo: bool = False,
        pool_size: int = 10,
        inline: bool = True,
        fast_paths: bool | None = None,
        log_store: str | None = None,
    ) -> None:
        self.url = normalize_database_url(url)
        self.fast_paths = fast_paths_from_env() if fast_paths is None else fast_paths
        self.run_sync: Callable[..., Awaitable[Any]] = (
            run_sync if self.fast_paths else greenlet_spawn
        )
        options: dict[str, Any] = {} if self.fast_paths else {PREPARED: False}
        # Where run log lines live (``storage.log_store``); the environment's when not given.
        self.log_store = log_store_of(log_store_from_env() if log_store is None else log_store)
        self._checkpointer: WalCheckpointer | None = None
        parsed = make_url(self.url)
        self.dialect = parsed.get_backend_name()
        if self.dialect == "sqlite":
            self.write_engine = _sqlite_engine(
                self.url, echo=echo, inline=inline, pool_size=1, options=options
            )
            self.read_engine = _sqlite_engine(
                self.url, echo=echo, inline=inline, pool_size=pool_size, options=options
            )
            _configure_sqlite(self.write_engine, immediate=True, inline=inline)
            _configure_sqlite(self.read_engine, immediate=False, inline=inline)
            database = parsed.database
            if inline and database and database != ":memory:":
                self._checkpointer = WalCheckpointer(database)
                self._checkpointer.start()
        else:
            self.write_engine = create_async_engine(
                self.url,
                echo=echo,
                pool_size=pool_size,
                max_overflow=pool_size,
                pool_pre_ping=True,
                execution_options=options,
            )
            self.read_engine = self.write_engine
        self._group_commit = _GroupCommit(self)
        info = {"log_store": self.log_store}
        self._write_sessions = async_sessionmaker(
            self.write_engine, expire_on_commit=False, info=info
        )
        self._read_sessions = async_sessionmaker(
            self.read_engine, expire_on_commit=False, info=info
        )

    @property
    def is_sqlite(self) -> bool:
        return self.dialect == "sqlite"

    @asynccontextmanager
    async def write(self) -> AsyncIterator[AsyncSession]:
        """A transaction that commits on success and rolls back on error."""
        async with self._write_sessions() as session, session.begin():
            yield session

    async def transact(self, work: Callable[[Connection], T]) -> T:
        """Run ``work(connection)`` in one write transaction on a Core connection (no ORM
        session), committed if it returns and rolled back if it raises: for the hot writes.

        The whole transaction, checkout to commit, is one trip into SQLAlchemy's synchronous
        core, where ``async with engine.begin()`` plus ``run_sync`` would be three.
        """
        return await self.run_sync(self._transact, work)  # type: ignore[no-any-return]

    def _transact(self, work: Callable[[Connection], T]) -> T:
        with self.write_engine.sync_engine.begin() as conn:
            return work(conn)

    async def transact_grouped(self, work: Callable[[Connection], T]) -> T:
        """``transact``, except that concurrent calls share one transaction.

        Group commit: the works that callers hand in while the event loop is busy run one
        after the other in a single write transaction, committed once, and each caller gets
        its own work's result after that commit. On SQLite, which has one writer at a time,
        separate transactions would run one after the other anyway, each paying for its
        begin, commit and pool checkout; on PostgreSQL each would pay a round trip for its
        begin, its commit and each statement, which a group pays once. If any work of a
        group raises (or the commit fails), the whole group rolls back and each work runs
        again alone, so every caller gets exactly the result or exception that ``transact``
        would have given it: a work must therefore have no effect outside ``connection`` (it
        may run twice).
        """
        return await self.transact_batched(_each, work)

    async def transact_batched(self, batch: Batch[I, T], item: I) -> T:
        """``transact_grouped`` of ``batch(connection, [item])``, except that the items of
        one group that share ``batch`` (the same function object: give a function of a
        module, not a new closure per call) are handed to one call of it, so that it may run
        each statement once for all of them (one ``executemany``).

        ``batch`` must return exactly what each item would have got from a call of its own
        with that item alone, in the same transaction after the items before it; an item
        whose call of its own would raise must make the group's call raise (a group that
        fails runs each item alone, ``batch(connection, [item])``, in its own transaction).
        """
        return await self._group_commit.submit(batch, item)

    async def query(self, work: Callable[[Connection], T]) -> T:
        """Run ``work(connection)`` in a read-only transaction on a Core connection (rolled
        back at the end): for the hot reads, in one trip into SQLAlchemy's synchronous core
        and without building ORM records (as ``transact`` for writes)."""
        return await self.run_sync(self._query, work)  # type: ignore[no-any-return]

    def _query(self, work: Callable[[Connection], T]) -> T:
        with self.read_engine.sync_engine.connect() as conn:
            return work(conn)

    @asynccontextmanager
    async def read(self) -> AsyncIterator[AsyncSession]:
        """A read-only transaction (rolled back at the end)."""
        async with self._read_sessions() as session:
            yield session

    async def dispose(self) -> None:
        await self._group_commit.drain()
        if self._checkpointer is not None:
            await asyncio.to_thread(self._checkpointer.stop)
            self._checkpointer = None
        await self.write_engine.dispose()
        if self.read_engine is not self.write_engine:
            await self.read_engine.dispose()


class _GroupCommit:
    """The queue of ``Database.transact_batched``: one flusher task at a time per database."""

    def __init__(self, database: Database) -> None:
        self.database = database
        self.pending: list[_Entry] = []
        self.flusher: asyncio.Task[None] | None = None

    async def submit(self, batch: Batch[I, T], item: I) -> T:
        loop = asyncio.get_running_loop()
        future: asyncio.Future[T] = loop.create_future()
        self.pending.append((batch, item, future))
        if self.flusher is None or self.flusher.done():
            # Scheduled behind the requests that are ready to run now, so those that reach
            # their write in this turn of the loop join the same transaction.
            self.flusher = loop.create_task(self._flush())
        return await future

    async def drain(self) -> None:
        """Wait for the groups in flight (a flusher of another, finished loop is gone)."""
        flusher = self.flusher
        running = asyncio.get_running_loop()
        if flusher is not None and not flusher.done() and flusher.get_loop() is running:
            await flusher

    async def _flush(self) -> None:
        try:
            while self.pending:
                group, self.pending = self.pending, []
                await self._commit(group)
        except BaseException as error:  # cancelled at shutdown: nobody may wait forever
            for _, _, future in self.pending:
                if not future.done():
                    future.set_exception(error)
            self.pending = []
            raise

    async def _commit(self, group: list[_Entry]) -> None:
        batches: dict[Batch[Any, Any], list[_Entry]] = {}
        for entry in group:
            batches.setdefault(entry[0], []).append(entry)
        try:
            results = await self.database.run_sync(self._transact_all, list(batches.items()))
        except Exception:
            # Rolled back as a whole: each item alone now, for its own result or exception.
            for batch, item, future in group:
                try:
                    result = await self.database.transact(_alone(batch, item))
                except Exception as error:
                    _settle(future, error=error)
                else:
                    _settle(future, result=result)
            return
        for entries, outcomes in zip(batches.values(), results, strict=True):
            for (_, _, future), result in zip(entries, outcomes, strict=True):
                _settle(future, result=result)

    def _transact_all(
        self, batches: list[tuple[Batch[Any, Any], list[_Entry]]]
    ) -> list[Sequence[Any]]:
        with self.database.write_engine.sync_engine.begin() as conn:
            return [batch(conn, [item for _, item, _ in entries]) for batch, entries in batches]


_Entry = tuple[Batch[Any, Any], Any, "asyncio.Future[Any]"]
"""A queued item: its batch, the item and its caller's future."""


def _each(conn: Connection, works: Sequence[Callable[[Connection], T]]) -> list[T]:
    """The batch of ``transact_grouped``: works that share nothing but the transaction."""
    return [work(conn) for work in works]


def _alone(batch: Batch[I, T], item: I) -> Callable[[Connection], T]:
    """The work of ``item`` in a batch of its own."""

    def work(conn: Connection) -> T:
        (result,) = batch(conn, [item])
        return result

    return work


def _settle(future: asyncio.Future[Any], *, result: Any = None, error: Any = None) -> None:
    """Hand a caller its outcome, unless it stopped waiting (a client that went away)."""
    if future.done():
        return
    if error is not None:
        future.set_exception(error)
    else:
        future.set_result(result)
