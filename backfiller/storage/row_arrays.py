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

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import ColumnElement, Table, bindparam, column, func, update
from sqlalchemy.dialects.postgresql import ARRAY
from sqlalchemy.sql.selectable import TableValuedAlias
from sqlalchemy.types import TypeEngine

from backfiller.storage.prepared import Prepared

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


Columns = Mapping[str, ColumnElement[Any]]
"""A row's values by name: bound parameters, or an :func:`unnested` table's columns."""


@dataclass(frozen=True, slots=True)
class RowUpdate:
    """An UPDATE of ``table`` for each of many rows, in both shapes: ``each`` with one bound
    parameter per name (an ``executemany``: SQLite), ``together`` reading every row from one
    array per name (``UPDATE ... FROM unnest(...)``, one statement: PostgreSQL). A statement of
    a partitioned table is planned once for the batch, not once per row, and each row still
    reads only its own partition (the join prunes at each row)."""

    each: Prepared
    together: Prepared
    names: tuple[str, ...]

    @classmethod
    def of(
        cls,
        table: Table,
        columns: Sequence[tuple[str, TypeEngine[Any]]],
        where: Callable[[Columns], Sequence[ColumnElement[bool]]],
        values: Callable[[Columns], Mapping[str, Any]],
    ) -> RowUpdate:
        def build(row: Columns) -> Prepared:
            return Prepared(update(table).where(*where(row)).values(**values(row)))

        rows = unnested(*columns)
        return cls(
            each=build({name: bindparam(name, type_=type_) for name, type_ in columns}),
            together=build({name: rows.c[name] for name, _ in columns}),
            names=tuple(name for name, _ in columns),
        )
