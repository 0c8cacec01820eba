"""A list bound as one parameter (``storage/value_lists.py``) selects what an expanding ``IN``
selects, on the database under test, through SQLAlchemy and through a prepared statement."""

from __future__ import annotations

from typing import Any

import pytest
from sqlalchemy import Connection, bindparam, insert, select

from backfiller.domain import SlotState
from backfiller.storage import Database
from backfiller.storage.prepared import Prepared
from backfiller.storage.records import BackfillRecord, SlotRecord, table_of
from backfiller.storage.value_lists import one_of_list
from tests.integration.test_prepared import NOW, _backfill_row

slots = table_of(SlotRecord)
KEYS = ["2024-01-01", 'ünï\'cøde "key"', "a,b]", "[1]", "x" * 400, "null", "", "7"]


def _slot(position: int, key: str) -> dict[str, Any]:
    return {
        "backfill_id": 1,
        "position": position,
        "partition_key": key,
        "status": SlotState.PENDING,
        "attempts": 0,
        "free_attempts": 0,
        "lost_attempts": 0,
        "skip_reason": None,
        "next_attempt_at": None,
        "updated_at": NOW,
    }


@pytest.mark.parametrize(
    "wanted",
    [[], KEYS[:1], KEYS, [KEYS[1], "absent", KEYS[4], KEYS[6]], ["7", "8"], KEYS * 3],
    ids=["none", "one", "all", "some-and-absent", "digits", "repeated"],
)
async def test_keys_among_a_list_are_those_in_selects(
    database: Database, wanted: list[str]
) -> None:
    def work(conn: Connection) -> None:
        conn.execute(insert(table_of(BackfillRecord)), _backfill_row(1, "k"))
        conn.execute(insert(slots), [_slot(i, k) for i, k in enumerate(KEYS)])
        dialect = conn.dialect.name
        expected = set(
            conn.execute(select(slots.c.partition_key).where(slots.c.partition_key.in_(wanted)))
            .scalars()
            .all()
        )
        among = select(slots.c.partition_key).where(
            one_of_list(dialect, slots.c.partition_key, "b_keys"),
            slots.c.backfill_id == bindparam("b_pk"),
        )
        through_sqlalchemy = conn.execute(among, {"b_keys": wanted, "b_pk": 1}).scalars().all()
        prepared = Prepared(among).rows(conn, {"b_keys": wanted, "b_pk": 1})
        assert sorted(through_sqlalchemy) == sorted(expected)
        assert sorted(key for (key,) in prepared) == sorted(expected)
        ids = Prepared(select(slots.c.position).where(one_of_list(dialect, slots.c.id, "b_ids")))
        chosen = conn.execute(select(slots.c.id).where(slots.c.partition_key.in_(wanted)))
        positions = ids.rows(conn, {"b_ids": list(chosen.scalars())})
        assert sorted(p for (p,) in positions) == sorted(KEYS.index(k) for k in expected)

    await database.transact(work)
