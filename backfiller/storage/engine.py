"""Engines and transactions. The session lifecycle lives here, outside the data functions."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from sqlalchemy import event
from sqlalchemy.engine import make_url
from sqlalchemy.ext.asyncio import (
    AsyncEngine,
    AsyncSession,
    async_sessionmaker,
    create_async_engine,
)

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


def sync_database_url(url: str) -> str:
    """The synchronous twin of an async URL (for Alembic)."""
    parsed = make_url(normalize_database_url(url))
    if parsed.get_backend_name() == "sqlite":
        return parsed.set(drivername="sqlite+pysqlite").render_as_string(hide_password=False)
    return parsed.render_as_string(hide_password=False)


def _configure_sqlite(engine: AsyncEngine, *, immediate: bool) -> None:
    @event.listens_for(engine.sync_engine, "connect")
    def _on_connect(dbapi_connection: Any, _record: Any) -> None:
        # Let SQLAlchemy, not the driver, decide when transactions begin.
        dbapi_connection.isolation_level = None
        cursor = dbapi_connection.cursor()
        cursor.execute("PRAGMA journal_mode=WAL")
        cursor.execute("PRAGMA synchronous=NORMAL")
        cursor.execute("PRAGMA busy_timeout=30000")
        cursor.execute("PRAGMA foreign_keys=ON")
        cursor.close()

    begin = "BEGIN IMMEDIATE" if immediate else "BEGIN"

    @event.listens_for(engine.sync_engine, "begin")
    def _on_begin(conn: Any) -> None:
        conn.exec_driver_sql(begin)


class Database:
    """Owns the engines of one database and hands out transactions.

    ``write()`` opens a transaction that may write. On SQLite it takes the write lock up front
    (``BEGIN IMMEDIATE``) so two writers queue instead of failing on lock upgrade. ``read()``
    opens a transaction for reading only (no lock on SQLite's WAL).
    """

    def __init__(self, url: str | None, *, echo: bool = False, pool_size: int = 10) -> None:
        self.url = normalize_database_url(url)
        parsed = make_url(self.url)
        self.dialect = parsed.get_backend_name()
        if self.dialect == "sqlite":
            self.write_engine = create_async_engine(self.url, echo=echo)
            self.read_engine = create_async_engine(self.url, echo=echo)
            _configure_sqlite(self.write_engine, immediate=True)
            _configure_sqlite(self.read_engine, immediate=False)
        else:
            self.write_engine = create_async_engine(
                self.url,
                echo=echo,
                pool_size=pool_size,
                max_overflow=pool_size,
                pool_pre_ping=True,
            )
            self.read_engine = self.write_engine
        self._write_sessions = async_sessionmaker(self.write_engine, expire_on_commit=False)
        self._read_sessions = async_sessionmaker(self.read_engine, expire_on_commit=False)

    @property
    def is_sqlite(self) -> bool:
        return self.dialect == "sqlite"

    @asynccontextmanager
    async def write(self) -> AsyncIterator[AsyncSession]:
        """A transaction that commits on success and rolls back on error."""
        async with self._write_sessions() as session, session.begin():
            yield session

    @asynccontextmanager
    async def read(self) -> AsyncIterator[AsyncSession]:
        """A read-only transaction (rolled back at the end)."""
        async with self._read_sessions() as session:
            yield session

    async def dispose(self) -> None:
        await self.write_engine.dispose()
        if self.read_engine is not self.write_engine:
            await self.read_engine.dispose()
