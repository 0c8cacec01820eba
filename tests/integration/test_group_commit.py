"""Database.transact_grouped: concurrent writes share one transaction (group commit), on
SQLite and on PostgreSQL, and each caller still gets exactly its own work's outcome."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime
from typing import Any

import pytest
from sqlalchemy import Connection

from backfiller.storage import Database
from backfiller.storage.auth import AuditEntry, add_audit_entry
from backfiller.storage.auth_records import AuditOutcome, AuditRecord
from tests.support import commits_of, count_rows


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


def writes(operation: str) -> Any:
    def work(conn: Connection) -> str:
        add_audit_entry(conn, entry(operation))
        return operation

    return work


def fails_after_writing(operation: str) -> Any:
    def work(conn: Connection) -> str:
        add_audit_entry(conn, entry(operation))
        raise ValueError(operation)

    return work


async def test_concurrent_writes_commit_together_and_each_gets_its_result(
    database: Database,
) -> None:
    commits = commits_of(database)
    results = await asyncio.gather(*(database.transact_grouped(writes(f"w{i}")) for i in range(20)))
    assert results == [f"w{i}" for i in range(20)]
    assert await count_rows(database, AuditRecord) == 20
    assert commits[0] == 1  # the twenty share one commit


async def test_a_failing_write_fails_alone_and_leaves_nothing_behind(database: Database) -> None:
    works = [writes("a"), fails_after_writing("lost"), writes("b")]
    outcomes = await asyncio.gather(
        *(database.transact_grouped(work) for work in works), return_exceptions=True
    )
    assert outcomes[0] == "a" and outcomes[2] == "b"
    assert isinstance(outcomes[1], ValueError)
    assert await count_rows(database, AuditRecord) == 2  # "lost" rolled back, the others kept


async def test_a_caller_that_stops_waiting_does_not_stop_the_others(database: Database) -> None:
    gone = asyncio.ensure_future(database.transact_grouped(writes("gone")))
    kept = asyncio.ensure_future(database.transact_grouped(writes("kept")))
    await asyncio.sleep(0)  # both are queued
    gone.cancel()
    assert await kept == "kept"
    with pytest.raises(asyncio.CancelledError):
        await gone
    # The cancelled caller's write may or may not have committed with the group; the
    # other's did, and nothing waits forever.
    assert await count_rows(database, AuditRecord) in (1, 2)
