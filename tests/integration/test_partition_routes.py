"""The partition that holds a backfill's rows (``storage.partition_routes``), on PostgreSQL:
read from the catalog, read again for a range made since, and a range dropped since it was
read fails the statement once and is forgotten."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime

import pytest
from sqlalchemy import create_engine, text
from sqlalchemy.exc import DBAPIError

from backfiller.domain import SlotState
from backfiller.storage import Database
from backfiller.storage.execution.claims import _MARK_QUEUED
from backfiller.storage.execution.common import SessionRepository
from backfiller.storage.history_partitions import PARTITIONED, Range, create_range
from backfiller.storage.partition_routes import routes_of
from tests.conftest import RANGES_BASE

pytestmark = pytest.mark.usefixtures("only_postgres")

FIRST = RANGES_BASE + 1


def test_a_backfill_is_routed_to_its_range_or_the_default(
    database_url: str, history_ranges: Callable[[int], None]
) -> None:
    history_ranges(10)  # [FIRST, FIRST + 10) and [FIRST + 10, FIRST + 1010)
    engine = create_engine(database_url)
    other = create_engine(database_url)
    try:
        with engine.begin() as conn:
            routes = routes_of(conn)
            assert routes.where(conn, FIRST) == f"b{FIRST}"
            assert routes.where(conn, FIRST + 9) == f"b{FIRST}"
            assert routes.where(conn, FIRST + 10) == f"b{FIRST + 10}"
            assert routes.where(conn, FIRST + 1010) == "default"  # beyond them
            # In no range (below them all here): the DEFAULT partition, the only one that can
            # hold its rows.
            assert routes.where(conn, 5) == "default"
        # A range made since (another daemon's ``make_ahead``, above every id handed out) is
        # read for an id above the newest range known; an id written to the DEFAULT partition
        # before it stays there.
        with other.begin() as conn:
            create_range(conn, Range(FIRST + 1020, FIRST + 2020))
        with engine.begin() as conn:
            assert routes_of(conn).where(conn, FIRST + 1500) == f"b{FIRST + 1020}"
            assert routes_of(conn).where(conn, FIRST + 1015) == "default"
    finally:
        engine.dispose()
        other.dispose()


async def test_a_range_dropped_since_it_was_read_fails_once_then_goes_to_the_default(
    database: Database, database_url: str, history_ranges: Callable[[int], None]
) -> None:
    history_ranges(10)
    now = datetime.now(UTC)
    rows = [{"b_id": 1, "b_backfill": FIRST, "b_now": now}]
    async with database.write() as session:  # the ranges are read: FIRST is in its range
        assert await SessionRepository(session).update_rows(_MARK_QUEUED, rows) == 0
    other = create_engine(database_url)
    with other.begin() as conn:
        for table in PARTITIONED:
            conn.execute(text(f"DROP TABLE {Range(FIRST, FIRST + 10).name(table)}"))
    other.dispose()
    with pytest.raises(DBAPIError):
        async with database.write() as session:
            await SessionRepository(session).update_rows(_MARK_QUEUED, rows)
    async with database.write() as session:  # read again: in no range, the DEFAULT partition
        assert await SessionRepository(session).update_rows(_MARK_QUEUED, rows) == 0


async def test_a_slot_is_updated_in_its_partition(
    database: Database, history_ranges: Callable[[int], None]
) -> None:
    history_ranges(10)
    backfill = FIRST + 10
    now = datetime.now(UTC)
    insert = text(
        "INSERT INTO slots (backfill_id, position, partition_key, status, attempts, "
        "free_attempts, lost_attempts, updated_at) VALUES (:b, 0, 'k', :s, 0, 0, 0, :now) "
        "RETURNING id, tableoid::regclass::text"
    )
    slot, where = await database.transact(
        lambda conn: conn.execute(
            insert, {"b": backfill, "s": SlotState.PENDING.value, "now": now}
        ).one()
    )
    assert where == f"slots_b{backfill}"
    rows = [{"b_id": slot, "b_backfill": backfill, "b_now": now}]
    async with database.write() as session:
        assert await SessionRepository(session).update_rows(_MARK_QUEUED, rows) == 1
    status = await database.query(
        lambda conn: conn.execute(
            text(f"SELECT status, attempts FROM slots_b{backfill} WHERE id = :id"), {"id": slot}
        ).one()
    )
    assert (status[0], status[1]) == (SlotState.QUEUED.value, 1)
