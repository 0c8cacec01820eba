"""Which partition holds a backfill's rows, so that the daemon's statements by row name it.

On PostgreSQL ``runs`` and ``slots`` are partitioned by backfill id ranges
(``storage.history_partitions``). An UPDATE of the parent is planned over every partition,
with its generic plan as much as with a custom one (pruning at run time comes after); each
new range makes that plan longer, and autovacuum's analyze of a growing partition makes every
connection plan it again: at 51 ranges, 3.6 ms a plan, about 50 plans for 10,000 runs of each
statement. The same update of the partition itself is planned over one table. So are the
daemon's updates of runs and slots by row (``SessionRepository.update_rows``), the start
gate's check (``execution.starts``) and the results' read of their runs with their slots
(``execution.results``; said of the parents, the slots could only be pruned when planned by a
condition of their own, which PostgreSQL took as a way in on a new partition's statistics:
every slot of the backfill read for each batch).

A :class:`ByPartition` statement is built for the parent and, on demand, for any partition
(the same columns under the partition's name). :class:`Routes` maps a backfill id to the table
that holds its rows, from the ranges in the catalog, read again when an id lies above the
newest range known (a range made since by another daemon), and every 10 seconds in any case.

The map cannot go stale for the rows the daemon reaches this way: a range is made only above
every id handed out (a row never moves into it), and it is dropped only once none of its
backfills is kept, when the daemon updates none of their runs or slots. An id in no range has
its rows, if any, in the ``DEFAULT`` partition (written before a range covered it: a dropped
range took its own rows with it). A statement that finds its partition gone (dropped in the
last seconds, which only an operator's hand would do to a running backfill) fails its
transaction, which is tried again with the ranges read again.
"""

from __future__ import annotations

import bisect
import time
import weakref
from collections.abc import Callable, Iterable
from typing import Any

from sqlalchemy import Column, Connection, Engine, MetaData, Table

from backfiller.storage.history_partitions import Range, partitioned, ranges
from backfiller.storage.prepared import Prepared

DEFAULT = "default"
READ_AGAIN_SECONDS = 10.0
"""How long the ranges read are used before they are read again, in any case."""
UNDEFINED_TABLE = "42P01"
"""PostgreSQL's code for a table that does not exist (a partition dropped since it was read)."""


class Routes:
    """The history's ranges as last read, for one database (see the module's docstring)."""

    def __init__(self) -> None:
        self._ranges: list[Range] | None = None
        self._lows: list[int] = []
        self._partitioned = False
        self._read_at = 0.0

    def forget(self) -> None:
        """Read the ranges again at the next lookup."""
        self._ranges = None

    def where(self, conn: Connection, backfill_id: int) -> str | None:
        """Where the rows of ``backfill_id`` are: the suffix of the partitions that hold them
        (``b<low>`` of a range, or ``default``), or None on a database without ranges."""
        if (
            self._ranges is None
            or (self._ranges and backfill_id >= self._ranges[-1].high)
            or time.monotonic() - self._read_at > READ_AGAIN_SECONDS
        ):
            self._load(conn)
        if not self._partitioned:
            return None
        found = self._find(backfill_id)
        # In no range: its rows, if any, are in the ``DEFAULT`` partition (written before a
        # range covered the id, or never covered: a range dropped took its rows with it).
        return DEFAULT if found is None else f"b{found.low}"

    def low_of(self, conn: Connection, backfill_id: int) -> int:
        """The first id of the range that holds ``backfill_id`` (the id itself outside the
        ranges, or on a database without them)."""
        self.where(conn, backfill_id)  # the ranges read, if they must be
        found = self._find(backfill_id) if self._partitioned else None
        return backfill_id if found is None else found.low

    def _load(self, conn: Connection) -> None:
        self._partitioned = partitioned(conn)
        self._ranges = ranges(conn) if self._partitioned else []
        self._lows = [r.low for r in self._ranges]
        self._read_at = time.monotonic()

    def _find(self, backfill_id: int) -> Range | None:
        assert self._ranges is not None
        i = bisect.bisect_right(self._lows, backfill_id) - 1
        if i >= 0 and backfill_id in self._ranges[i]:
            return self._ranges[i]
        return None


_routes: weakref.WeakKeyDictionary[Engine, Routes] = weakref.WeakKeyDictionary()


def routes_of(conn: Connection) -> Routes:
    """The :class:`Routes` of ``conn``'s database (one per engine, so per process)."""
    return _routes.setdefault(conn.engine, Routes())


class ByPartition:
    """A statement of tables partitioned by backfill, built by ``build`` for the tables
    themselves and for their partitions of any range (see the module's docstring)."""

    def __init__(self, tables: Table | tuple[Table, ...], build: Callable[..., Any]) -> None:
        self.tables = tables if isinstance(tables, tuple) else (tables,)
        self._build = build
        self.parent = Prepared(build(*self.tables))
        """The statement of the tables themselves (every database)."""
        self._on: dict[str, Prepared] = {}

    def on(self, where: str | None) -> Prepared:
        """The statement of the partitions ``where`` (:meth:`Routes.where`), built once; of
        the tables themselves for None."""
        if where is None:
            return self.parent
        try:
            return self._on[where]
        except KeyError:
            built = self._on[where] = Prepared(
                self._build(*(_partition(t, f"{t.name}_{where}") for t in self.tables))
            )
            return built

    def of(self, conn: Connection, backfills: Iterable[int]) -> Prepared:
        """The statement of the partitions that hold the rows of all of ``backfills`` (the
        usual case: a batch of one backfill's rows), else of the tables themselves."""
        if conn.dialect.name != "postgresql":
            return self.parent
        routes = routes_of(conn)
        where = {routes.where(conn, b) for b in backfills}
        return self.on(where.pop()) if len(where) == 1 else self.parent


def _partition(table: Table, name: str) -> Table:
    """``table``'s columns under the name ``name``, to build statements of a partition."""
    return Table(name, MetaData(), *(Column(c.name, c.type, key=c.key) for c in table.columns))
