"""Storage guarantees that the database itself enforces, on SQLite and PostgreSQL."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta, timezone

import pytest
from sqlalchemy import Connection
from sqlalchemy.exc import IntegrityError, StatementError

from backfiller.domain import (
    BackfillState,
    RunState,
    SlotState,
)
from backfiller.storage import Database
from backfiller.storage.launches import add_backfill
from backfiller.storage.records import BackfillRecord, RunRecord, SlotRecord
from backfiller.storage.repositories import BackfillRepository
from tests.support import count_rows, new_backfill

NOW = datetime(2026, 6, 15, 12, 0, tzinfo=UTC)


async def test_datetimes_come_back_aware_and_in_utc(database: Database) -> None:
    paris = timezone(timedelta(hours=2))
    async with database.write() as session:
        record = await BackfillRepository(session).add(new_backfill(), NOW.astimezone(paris))
        pk = record.id
    async with database.read() as session:
        loaded = await BackfillRepository(session).get(pk)
    assert loaded is not None
    assert loaded.created_at == NOW
    assert loaded.created_at.utcoffset() == timedelta(0)


async def test_naive_datetimes_are_refused(database: Database) -> None:
    with pytest.raises(StatementError):
        async with database.write() as session:
            await BackfillRepository(session).add(new_backfill(), NOW.replace(tzinfo=None))


async def test_an_idempotency_key_is_unique(database: Database) -> None:
    async with database.write() as session:
        await BackfillRepository(session).add(new_backfill("k"), NOW)
    with pytest.raises(IntegrityError):
        async with database.write() as session:
            await BackfillRepository(session).add(new_backfill("k"), NOW)


async def test_a_partition_never_has_two_active_runs(database: Database) -> None:
    async with database.write() as session:
        a = await BackfillRepository(session).add(new_backfill(), NOW)
        b = await BackfillRepository(session).add(new_backfill(), NOW)
        slots = [
            SlotRecord(
                backfill_id=bf.id,
                position=0,
                partition_key="2024-01-01",
                status=SlotState.QUEUED,
                attempts=1,
                updated_at=NOW,
            )
            for bf in (a, b)
        ]
        session.add_all(slots)
        await session.flush()
        session.add(
            RunRecord(
                backfill_id=a.id,
                slot_id=slots[0].id,
                job_name="daily_sales",
                partition_key="2024-01-01",
                attempt=1,
                status=RunState.RUNNING,
                queued_at=NOW,
            )
        )
        ids = (a.id, b.id, slots[1].id)
    with pytest.raises(IntegrityError):
        async with database.write() as session:
            session.add(
                RunRecord(
                    backfill_id=ids[1],
                    slot_id=ids[2],
                    job_name="daily_sales",
                    partition_key="2024-01-01",
                    attempt=1,
                    status=RunState.QUEUED,
                    queued_at=NOW,
                )
            )
    # A finished run does not block a new one.
    async with database.write() as session:
        session.add(
            RunRecord(
                backfill_id=ids[1],
                slot_id=ids[2],
                job_name="daily_sales",
                partition_key="2024-01-01",
                attempt=1,
                status=RunState.SUCCESS,
                queued_at=NOW,
            )
        )


async def test_conditional_moves_lose_against_a_newer_state(database: Database) -> None:
    async with database.write() as session:
        pk = (await BackfillRepository(session).add(new_backfill(), NOW)).id
    async with database.write() as session:
        repo = BackfillRepository(session)
        assert await repo.move(pk, BackfillState.PAUSED, [BackfillState.REQUESTED], NOW)
        # A stale caller that still believes the backfill is REQUESTED changes nothing.
        assert not await repo.move(pk, BackfillState.RUNNING, [BackfillState.REQUESTED], NOW)
    async with database.read() as session:
        record = await session.get(BackfillRecord, pk)
        assert record is not None and record.status is BackfillState.PAUSED
        assert record.version == 1


async def test_transact_commits_what_its_work_wrote_and_returns_its_result(
    database: Database,
) -> None:
    record = await database.transact(lambda conn: add_backfill(conn, new_backfill("a"), NOW))
    assert await count_rows(database, BackfillRecord) == 1
    async with database.read() as session:
        loaded = await BackfillRepository(session).get(record.id)
    assert loaded is not None and loaded.idempotency_key == "a"


async def test_transact_rolls_back_whole_when_its_work_raises(database: Database) -> None:
    def half_then_fail(conn: Connection) -> None:
        add_backfill(conn, new_backfill("lost"), NOW)
        raise RuntimeError("boom")

    with pytest.raises(RuntimeError, match="boom"):
        await database.transact(half_then_fail)
    assert await count_rows(database, BackfillRecord) == 0
    # The unique index fails the second insert: the first one goes too, and the
    # connection is usable afterwards.
    with pytest.raises(IntegrityError):
        await database.transact(
            lambda conn: [add_backfill(conn, new_backfill("twice"), NOW) for _ in range(2)]
        )
    assert await count_rows(database, BackfillRecord) == 0
    await database.transact(lambda conn: add_backfill(conn, new_backfill("kept"), NOW))
    assert await count_rows(database, BackfillRecord) == 1


async def test_concurrent_transacts_lose_nothing(database: Database) -> None:
    async def insert(i: int) -> BackfillRecord:
        return await database.transact(lambda conn: add_backfill(conn, new_backfill(f"k{i}"), NOW))

    records = await asyncio.gather(*(insert(i) for i in range(40)))
    assert len({record.id for record in records}) == 40
    assert await count_rows(database, BackfillRecord) == 40
