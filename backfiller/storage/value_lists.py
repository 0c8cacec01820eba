"""A list of values as one statement parameter: ``column`` is one of ``:name``'s values.

``column.in_(values)`` renders one parameter per value at every execution (SQLAlchemy's
"expanding" ``IN``), so a statement with it is compiled again, and its parameters processed
one by one, each time; a :class:`~backfiller.storage.prepared.Prepared` statement cannot hold
it. :func:`one_of_list` takes the whole list as one parameter instead, spelled for each
database: on SQLite a JSON array read by ``json_each``, on PostgreSQL an array (``= ANY``). The
statement is then the same for any number of values, and is built once per dialect.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

from sqlalchemy import Select, String, any_, bindparam, func, literal_column, select
from sqlalchemy.dialects.postgresql import ARRAY
from sqlalchemy.engine import Dialect
from sqlalchemy.sql.elements import ColumnElement
from sqlalchemy.types import TypeDecorator

DIALECTS = ("sqlite", "postgresql")
"""The databases the storage layer runs on (a statement built per dialect is built for each)."""


class _JsonArray(TypeDecorator[Any]):
    """A list of values bound as the text of a JSON array (SQLite's ``json_each`` reads it)."""

    impl = String
    cache_ok = True

    def process_bind_param(self, value: Iterable[Any] | None, dialect: Dialect) -> str | None:
        return None if value is None else json.dumps(list(value), separators=(",", ":"))


def one_of_list(dialect: str, column: Any, name: str) -> ColumnElement[bool]:
    """``column`` equals one of the values given as the parameter ``name`` (a list of ints or
    strings; an empty list matches nothing)."""
    if dialect == "postgresql":
        matches: ColumnElement[bool] = column == any_(bindparam(name, type_=ARRAY(column.type)))
        return matches
    values: Select[Any] = select(literal_column("value")).select_from(
        func.json_each(bindparam(name, type_=_JsonArray()))
    )
    among: ColumnElement[bool] = column.in_(values.scalar_subquery())
    return among
