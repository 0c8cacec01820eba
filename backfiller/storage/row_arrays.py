"""Many rows as one statement on PostgreSQL: a column's values as one array parameter.

An ``executemany`` of a statement sends and runs it once per row: on PostgreSQL each row is a
message of its own (psycopg's pipeline: a bind and an execute), whose values psycopg adapts one
by one in Python, and which the server binds and runs one by one. For the daemon's per-run
writes (a batch of a hundred runs is a few hundred rows) that is most of a batch's cost.
:func:`unnested` reads rows from arrays instead, one array per column (``unnest``), so that a
statement that reads its rows ``FROM`` it (``INSERT ... SELECT``, ``UPDATE ... FROM``) runs
once for the whole batch, with one parameter per column: :func:`arrays_of` turns the rows into
those parameters. PostgreSQL only: on SQLite a statement is a call into the library, and
``executemany`` costs little per row.

The rows of one such statement must name distinct target rows (an ``UPDATE ... FROM`` applies
one source row to each target row; an ``INSERT ... ON CONFLICT DO UPDATE`` refuses to change a
row twice), where ``executemany`` would apply them one after another.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from sqlalchemy import bindparam, column, func
from sqlalchemy.dialects.postgresql import ARRAY
from sqlalchemy.sql.selectable import TableValuedAlias
from sqlalchemy.types import TypeEngine

PREFIX = "a_"
"""A column's array parameter is its name with this prefix."""


def unnested(*columns: tuple[str, TypeEngine[Any]]) -> TableValuedAlias:
    """The rows given as one array parameter per ``(name, type)`` column (``a_<name>``), as a
    table whose columns have those names: ``unnest(:a_x, :a_y) AS anon(x, y)``."""
    arrays = [bindparam(f"{PREFIX}{name}", type_=ARRAY(type_)) for name, type_ in columns]
    table = func.unnest(*arrays).table_valued(*(column(name, type_) for name, type_ in columns))
    return table.render_derived()


def arrays_of(rows: Sequence[Mapping[str, Any]], names: Sequence[str]) -> dict[str, list[Any]]:
    """The parameters of :func:`unnested` for ``rows``: each name's values, in row order."""
    return {f"{PREFIX}{name}": [row[name] for row in rows] for name in names}
