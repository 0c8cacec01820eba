"""Prepared statements (``storage/prepared.py``) store exactly what SQLAlchemy's own execution
stores, raise SQLAlchemy's errors, and step aside while statements are traced."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest
from sqlalchemy import Connection, bindparam, event, insert, select, text, update
from sqlalchemy.exc import IntegrityError

from backfiller.domain import EventKind, Order, Reprocess, SelectionKind
from backfiller.storage import Database
from backfiller.storage.auth_records import AuditOutcome, AuditRecord
from backfiller.storage.launches import _backfill_values
from backfiller.storage.prepared import Prepared
from backfiller.storage.records import BackfillEventRecord, BackfillRecord, table_of
from tests.support import new_backfill

NOW = datetime(2026, 6, 15, 12, 0, 1, 234567, tzinfo=UTC)


def _backfill_row(pk: int, key: str) -> dict[str, Any]:
    new = new_backfill(
        key,
        selection_kind=SelectionKind.KEYS,
        keys=["2024-01-01", "2024-01-03"],
        reprocess=Reprocess.FAILED_AND_MISSING,
        order=Order.NEWEST_FIRST,
        run_config={"limit": 3, "nested": {"a": [1, None, "x"]}},
        tags=[("team", "data")],
        title="Ünïcode title",
        max_concurrent_runs=4,
    )
    return {**_backfill_values(new, NOW), "id": pk}


def _audit_row(codes: list[str]) -> dict[str, Any]:
    return {
        "at": NOW,
        "actor": "someone",
        "role": "admin",
        "operation": "launchBackfill",
        "subject": "1",
        "outcome": AuditOutcome.SUCCEEDED,
        "codes": codes,
        "message": None,
        "request_id": "r-1",
        "run_id": None,
    }


def _stored(conn: Connection, table: str, pk: int) -> dict[str, Any]:
    """A row as the database holds it (no type conversion on the way out)."""
    row = conn.execute(text(f"SELECT * FROM {table} WHERE id = :pk"), {"pk": pk}).mappings().one()
    return {k: v for k, v in row.items() if k != "id"}


async def test_rows_are_stored_as_sqlalchemy_stores_them(database: Database) -> None:
    backfills = insert(table_of(BackfillRecord))
    audit = insert(table_of(AuditRecord))
    events = insert(table_of(BackfillEventRecord))

    def work(conn: Connection) -> None:
        conn.execute(backfills, _backfill_row(1, "k1"))
        Prepared(backfills).many(conn, [_backfill_row(2, "k2")])
        one, two = _stored(conn, "backfills", 1), _stored(conn, "backfills", 2)
        assert one.pop("idempotency_key") == "k1" and two.pop("idempotency_key") == "k2"
        assert one == two
        for codes in ([], ["LIMIT", "OTHER"]):
            first = conn.execute(audit.returning(table_of(AuditRecord).c.id), _audit_row(codes))
            ((second,),) = Prepared(audit.returning(table_of(AuditRecord).c.id)).rows(
                conn, _audit_row(codes)
            )
            assert _stored(conn, "audit_log", first.scalar_one()) == _stored(
                conn, "audit_log", second
            )
        event_values = {
            "backfill_id": 1,
            "kind": EventKind.LAUNCHED.value,
            "at": NOW,
            "actor": None,
            "message": "m",
        }
        conn.execute(events, event_values)
        Prepared(events).rows(conn, event_values)
        stored = conn.execute(text("SELECT kind, at, actor, message FROM backfill_events")).all()
        assert len(stored) == 2 and stored[0] == stored[1]

    await database.transact(work)


async def test_rows_read_back_through_the_columns_types(database: Database) -> None:
    table = table_of(BackfillRecord)
    created = Prepared(select(table.c.id, table.c.created_at).order_by(table.c.id))
    later = NOW.replace(hour=13)
    # The same object in rows one after the other is converted once (see ``_all_values``).
    rows = [_backfill_row(7, "a"), _backfill_row(8, "b"), _backfill_row(9, "c")]
    rows[1]["created_at"] = later

    def work(conn: Connection) -> list[tuple[Any, ...]]:
        Prepared(insert(table)).many(conn, rows)
        return created.rows(conn, {})

    assert await database.transact(work) == [(7, NOW), (8, later), (9, NOW)]


async def test_many_tells_how_many_rows_an_update_matched(database: Database) -> None:
    table = table_of(BackfillRecord)
    retitle = Prepared(
        update(table).where(table.c.id == bindparam("b_id")).values(title=bindparam("b_title"))
    )

    def work(conn: Connection) -> int:
        Prepared(insert(table)).many(conn, [_backfill_row(1, "a"), _backfill_row(2, "b")])
        rows = [{"b_id": pk, "b_title": f"t{pk}"} for pk in (1, 2, 3)]
        return retitle.many(conn, rows)

    assert await database.transact(work) == 2
    titles = await database.query(
        lambda conn: conn.execute(select(table.c.title).order_by(table.c.id)).scalars().all()
    )
    assert titles == ["t1", "t2"]


async def test_a_refused_row_raises_sqlalchemy_s_error_and_writes_nothing(
    database: Database,
) -> None:
    backfills = Prepared(insert(table_of(BackfillRecord)))

    def work(conn: Connection) -> None:
        backfills.many(conn, [_backfill_row(1, "same"), _backfill_row(2, "same")])

    with pytest.raises(IntegrityError):
        await database.transact(work)
    count = await database.query(
        lambda conn: conn.execute(text("SELECT count(*) FROM backfills")).scalar_one()
    )
    assert count == 0


async def test_traced_statements_go_through_sqlalchemy(database: Database) -> None:
    seen: list[str] = []

    def listener(*args: Any) -> None:
        seen.append(args[2])

    engine = database.write_engine.sync_engine
    event.listen(engine, "before_cursor_execute", listener)
    try:
        await database.transact(
            lambda conn: Prepared(insert(table_of(BackfillRecord))).many(
                conn, [_backfill_row(1, "k")]
            )
        )
    finally:
        event.remove(engine, "before_cursor_execute", listener)
    assert any(s.startswith("INSERT INTO backfills") for s in seen)
