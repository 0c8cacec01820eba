"""SQLite on the event loop's thread: waits for locks without blocking the loop, keeps
transactions whole, and checkpoints the WAL in the background."""

from __future__ import annotations

import asyncio
import dataclasses
import os
import sqlite3
import threading
import time
from datetime import UTC, datetime
from pathlib import Path

import pytest
from sqlalchemy import func, insert, select, text

from backfiller.storage import Database
from backfiller.storage.auth import AuditEntry, AuditRepository
from backfiller.storage.auth_records import AuditOutcome, AuditRecord
from backfiller.storage.migrations import upgrade_database
from backfiller.storage.prepared import Prepared
from backfiller.storage.records import table_of
from tests.support import count_rows

pytestmark = pytest.mark.skipif(
    bool(os.environ.get("BACKFILLER_TEST_DATABASE_URL")), reason="SQLite's own driver"
)


@pytest.fixture
def sqlite_path(tmp_path: Path) -> Path:
    path = tmp_path / "inline.db"
    upgrade_database(f"sqlite:///{path}")
    return path


def entry(operation: str) -> AuditEntry:
    return AuditEntry(
        at=datetime.now(UTC),
        actor="tester",
        role="admin",
        operation=operation,
        subject=None,
        outcome=AuditOutcome.SUCCEEDED,
        codes=[],
        message=None,
        request_id=None,
    )


def file_size(path: Path) -> int:
    return path.stat().st_size


def grows_beyond(path: Path, size: int, within: float) -> bool:
    deadline = time.monotonic() + within
    while path.stat().st_size <= size:
        if time.monotonic() > deadline:
            return False
        time.sleep(0.1)
    return True


async def test_a_writer_waits_for_another_process_lock_without_blocking_the_loop(
    sqlite_path: Path,
) -> None:
    # Another connection (as another process would) holds the write lock for 0.4 s.
    holder = sqlite3.connect(sqlite_path, isolation_level=None, check_same_thread=False)
    holder.execute("BEGIN IMMEDIATE")
    release = threading.Timer(0.4, holder.commit)
    release.start()
    db = Database(f"sqlite:///{sqlite_path}")
    ticks = 0
    done = asyncio.Event()

    async def ticker() -> None:
        nonlocal ticks
        while not done.is_set():
            ticks += 1
            await asyncio.sleep(0.01)

    async def write() -> float:
        started = time.perf_counter()
        async with db.write() as session:
            await AuditRepository(session).add(entry("waited"))
        done.set()
        return time.perf_counter() - started

    try:
        waited, _ = await asyncio.gather(write(), ticker())
        assert waited >= 0.3  # it did wait for the lock...
        assert ticks >= 15  # ...and the loop went on meanwhile (a blocked loop ticks once)
        assert await count_rows(db, AuditRecord) == 1
    finally:
        release.join()
        holder.close()
        await db.dispose()


async def test_a_prepared_write_waits_for_another_process_lock_without_blocking_the_loop(
    sqlite_path: Path,
) -> None:
    """A prepared statement runs on the inline connection's own cursor (``storage/prepared.py``)
    and, first in its transaction, still waits on the event loop for the write lock."""
    db = Database(f"sqlite:///{sqlite_path}")
    audit = table_of(AuditRecord)
    insert_entry = Prepared(insert(audit))
    count = Prepared(select(func.count()).select_from(audit))
    row = dataclasses.asdict(entry("prepared")) | {"run_id": None}
    holder = sqlite3.connect(sqlite_path, isolation_level=None, check_same_thread=False)
    holder.execute("BEGIN IMMEDIATE")
    release = threading.Timer(0.4, holder.commit)
    started = time.perf_counter()
    release.start()
    try:
        ticker = asyncio.create_task(asyncio.sleep(0.1))
        await db.transact(lambda conn: insert_entry.rows(conn, row))
        assert time.perf_counter() - started >= 0.3
        assert ticker.done()  # the loop went on while the write waited
        assert await db.query(lambda conn: count.rows(conn, {})) == [(1,)]
    finally:
        release.join()
        holder.close()
        await db.dispose()


async def test_writers_of_one_process_take_turns_and_lose_nothing(sqlite_path: Path) -> None:
    db = Database(f"sqlite:///{sqlite_path}")

    async def write(i: int) -> None:
        async with db.write() as session:
            await AuditRepository(session).add(entry(f"w{i}"))
            await asyncio.sleep(0)  # give the others a chance to barge in mid-transaction

    try:
        await asyncio.gather(*(write(i) for i in range(50)))
        assert await count_rows(db, AuditRecord) == 50
    finally:
        await db.dispose()


async def test_a_failed_transaction_rolls_back_whole(sqlite_path: Path) -> None:
    db = Database(f"sqlite:///{sqlite_path}")
    try:
        with pytest.raises(RuntimeError):
            async with db.write() as session:
                await AuditRepository(session).add(entry("lost"))
                raise RuntimeError("boom")
        assert await count_rows(db, AuditRecord) == 0
        async with db.write() as session:  # the connection is usable afterwards
            await AuditRepository(session).add(entry("kept"))
        assert await count_rows(db, AuditRecord) == 1
    finally:
        await db.dispose()


async def test_the_wal_is_checkpointed_in_the_background(sqlite_path: Path) -> None:
    db = Database(f"sqlite:///{sqlite_path}")
    try:
        async with db.write() as session:
            auto = (await session.execute(text("PRAGMA wal_autocheckpoint"))).scalar_one()
        assert auto == 0  # no commit pays for a checkpoint...
        before = await asyncio.to_thread(file_size, sqlite_path)
        for i in range(200):
            async with db.write() as session:
                await AuditRepository(session).add(entry(f"c{i}" * 50))
        # ...and yet the rows reach the database file, moved there by the checkpointer.
        assert await asyncio.to_thread(grows_beyond, sqlite_path, before, 10.0)
        assert await count_rows(db, AuditRecord) == 200
    finally:
        await db.dispose()
