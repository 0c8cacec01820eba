"""Reads of backfill rows for the API's hot paths: Core statements, rows rather than records.

A row of the ``backfills`` table has the attributes of a :class:`BackfillRecord` (the same
names, the same types after SQLAlchemy's result processing), so the resolvers translate either.
Read through ``Database.query``, a row costs no ORM identity map, no instance state and no
async session: for ``backfill(id)``, the ``backfills`` page and progress polling. Synchronous
functions of a Core connection, like ``add_backfill``.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import Connection, Row, and_, bindparam, exists, select

from backfiller.storage.records import BackfillRecord, BackfillTagRecord
from backfiller.storage.repositories import BackfillQuery

BackfillRow = Row[Any]
"""A row of ``backfills`` with every column, read as a ``BackfillRecord``'s attributes."""

_BACKFILLS = BackfillRecord.__table__
_TAGS = BackfillTagRecord.__table__
_BY_ID = select(_BACKFILLS).where(_BACKFILLS.c.id == bindparam("pk"))


def backfill_row(conn: Connection, pk: int) -> BackfillRow | None:
    """The backfill ``pk``, or None."""
    return conn.execute(_BY_ID, {"pk": pk}).first()


def backfill_rows(
    conn: Connection, query: BackfillQuery, limit: int, before_id: int | None
) -> list[BackfillRow]:
    """Up to ``limit`` backfills matching ``query``, newest first; keyset pagination on the id
    (those with an id below ``before_id``)."""
    table = _BACKFILLS
    stmt = select(table).order_by(table.c.id.desc()).limit(limit)
    if before_id is not None:
        stmt = stmt.where(table.c.id < before_id)
    if query.statuses:
        stmt = stmt.where(table.c.status.in_(list(query.statuses)))
    if query.job_name is not None:
        stmt = stmt.where(table.c.job_name == query.job_name)
    if query.tag is not None:
        key, value = query.tag
        stmt = stmt.where(
            exists().where(
                and_(_TAGS.c.backfill_id == table.c.id, _TAGS.c.key == key, _TAGS.c.value == value)
            )
        )
    return list(conn.execute(stmt))
