"""Statements compiled once and handed straight to SQLite's cursor: the hottest writes.

``Connection.execute`` spends tens of microseconds of Python on every statement beyond the
database's own work: an execution context, the parameters looked up and converted one by one,
a result wrapped around the cursor. For a launch (three statements) or a daemon's tick (a
dozen), that is a large share of the whole. A :class:`Prepared` statement compiles its Core
statement once per set of parameter names, keeps the SQL, the order of the parameters and
each one's bind processor (the column type's own conversion, so what is stored is exactly
what SQLAlchemy itself would store), and then runs on the DBAPI cursor of the caller's
connection, in the caller's transaction.

Only on SQLite, only with the fast paths on (``Database(fast_paths=...)`` sets the engine's
:data:`PREPARED` execution option), and only when nothing listens to SQLAlchemy's statement
events (tracing does):
anywhere else, and for a statement this module cannot take (column defaults computed in
Python, expanding ``IN`` parameters), it is ``Connection.execute``, with the same results. A
driver's error is raised as SQLAlchemy's own wrapper (``IntegrityError`` and so on), and a
value a column refuses as a ``StatementError``, as ``Connection.execute`` would raise them.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import Connection
from sqlalchemy.engine import Dialect
from sqlalchemy.exc import DBAPIError
from sqlalchemy.sql import Executable
from sqlalchemy.util import await_

from backfiller.storage.inline_sqlite import InlineConnection, is_busy

Processor = Callable[[Any], Any] | None

PREPARED = "backfiller_prepared"
"""The execution option that, False, makes every statement ``Connection.execute``."""


@dataclass(frozen=True, slots=True)
class _Plan:
    sql: str
    names: tuple[str, ...]
    """The statement's parameters, in the order of its ``?`` marks."""
    defaults: tuple[Any, ...]
    """A parameter's value when a call does not give it (a literal of the statement)."""
    given: tuple[bool, ...]
    """Whether a call gives the parameter (else its default)."""
    processors: tuple[Processor, ...]
    results: tuple[Processor, ...] | None
    """The result columns' processors, when the statement returns rows."""


_NOT_PREPARED = None


class Prepared:
    """A Core ``statement`` to run many times (see the module's docstring)."""

    def __init__(self, statement: Executable) -> None:
        self.statement = statement
        self._plans: dict[tuple[str, ...], _Plan | None] = {}

    def rows(self, conn: Connection, params: Mapping[str, Any]) -> list[tuple[Any, ...]]:
        """Run the statement once with ``params``; the rows it returns, as tuples."""
        plan = self._plan_for(conn, params)
        if plan is None:
            result = conn.execute(self.statement, dict(params))
            return [tuple(r) for r in result] if result.returns_rows else []
        found, _ = _on_cursor(
            conn, plan, params, lambda c: c.execute(plan.sql, _values(plan, params))
        )
        return [_row(plan.results, r) for r in found] if plan.results is not None else []

    def many(self, conn: Connection, rows: Sequence[Mapping[str, Any]]) -> int:
        """Run the statement for each of ``rows`` (one ``executemany``); the rows it matched
        or wrote, all told (for an UPDATE or DELETE; an INSERT may tell -1, as the driver does).
        Every row must give the same parameters."""
        if not rows:
            return 0
        plan = self._plan_for(conn, rows[0])
        if plan is None:
            result = conn.execute(self.statement, [dict(r) for r in rows])
            return int(result.rowcount)
        _, count = _on_cursor(
            conn, plan, rows, lambda c: c.executemany(plan.sql, _all_values(plan, rows))
        )
        return count

    def _plan_for(self, conn: Connection, params: Mapping[str, Any]) -> _Plan | None:
        if (
            conn.dialect.name != "sqlite"
            or conn.dispatch.before_cursor_execute
            or not conn.get_execution_options().get(PREPARED, True)
        ):
            return _NOT_PREPARED
        keys = tuple(params)
        try:
            return self._plans[keys]
        except KeyError:
            plan = self._plans[keys] = _compile(self.statement, conn.dialect, keys)
            return plan


def _compile(statement: Executable, dialect: Dialect, keys: tuple[str, ...]) -> _Plan | None:
    """The plan of ``statement`` for calls that give ``keys``, or ``None`` when it needs
    SQLAlchemy at every call."""
    compile: Any = statement.compile  # type: ignore[attr-defined]
    compiled: Any = compile(dialect=dialect, column_keys=list(keys))
    names = compiled.positiontup
    if (
        not dialect.positional
        or names is None
        or compiled.insert_prefetch
        or compiled.update_prefetch
        or compiled.literal_execute_params
        or compiled.post_compile_params
    ):
        return None
    given = set(keys)
    binds = [compiled.binds[name] for name in names]
    if any(name not in given and b.required for name, b in zip(names, binds, strict=True)):
        return None
    results: tuple[Processor, ...] | None = None
    if getattr(statement, "_returning", None) or getattr(statement, "is_select", False):
        columns = statement.exported_columns  # type: ignore[attr-defined]
        results = tuple(
            c.type.dialect_impl(dialect).result_processor(dialect, None) for c in columns
        )
    return _Plan(
        sql=compiled.string,
        names=tuple(names),
        defaults=tuple(b.effective_value for b in binds),
        given=tuple(name in given for name in names),
        processors=tuple(b.type.dialect_impl(dialect).bind_processor(dialect) for b in binds),
        results=results,
    )


def _on_cursor(
    conn: Connection, plan: _Plan, params: Any, run: Callable[[Any], Any]
) -> tuple[Sequence[Any], int]:
    """``run(cursor)`` on a cursor of ``conn``'s connection: the rows it returned (when the
    statement returns rows) and its row count. Errors are raised as ``Connection.execute``
    raises them.

    On an inline SQLite connection the cursor is its own ``sqlite3`` cursor, with no trip
    through SQLAlchemy's async adapter (a coroutine, a lock and a greenlet switch per
    statement, for a call that never suspends); only the transaction's ``BEGIN`` and a
    statement that found the database busy wait on the event loop, as the adapter would."""
    driver = conn.connection.driver_connection
    cursor: Any
    if type(driver) is InlineConnection:
        try:
            if driver.begin_pending:
                await_(driver.begin_if_asked())
            cursor = driver.plain_cursor()
        except Exception as error:
            raise _wrapped(conn.dialect, plan.sql, params, error) from error
        run = _waiting_while_busy(driver, run)
    else:
        cursor = conn.connection.cursor()
    try:
        try:
            run(cursor)
        except Exception as error:
            raise _wrapped(conn.dialect, plan.sql, params, error) from error
        found = cursor.fetchall() if plan.results is not None else []
        return found, int(cursor.rowcount)
    finally:
        cursor.close()


def _waiting_while_busy(
    driver: InlineConnection, run: Callable[[Any], Any]
) -> Callable[[Any], Any]:
    """``run``, which, when SQLite says the database is busy, waits on the event loop and
    tries again (the statement did nothing)."""

    def waiting(cursor: Any) -> Any:
        try:
            return run(cursor)
        except sqlite3.OperationalError as error:
            if not is_busy(error):
                raise
        return await_(driver.retry_busy(lambda: run(cursor)))

    return waiting


def _values(plan: _Plan, params: Mapping[str, Any]) -> tuple[Any, ...]:
    out = []
    for name, given, default, process in zip(
        plan.names, plan.given, plan.defaults, plan.processors, strict=True
    ):
        value = params[name] if given else default
        out.append(value if process is None else process(value))
    return tuple(out)


def _all_values(plan: _Plan, rows: Sequence[Mapping[str, Any]]) -> list[tuple[Any, ...]]:
    """``_values`` of each row. A value that is the very object of the row before (the same
    ``now`` in every row, say) is converted once: a timestamp's conversion costs microseconds,
    and the rows of one call are converted together, before any could change."""
    out: list[tuple[Any, ...]] = []
    seen: list[Any] = [_NOTHING] * len(plan.names)
    made: list[Any] = [None] * len(plan.names)
    columns = list(
        enumerate(zip(plan.names, plan.given, plan.defaults, plan.processors, strict=True))
    )
    for params in rows:
        for i, (name, given, default, process) in columns:
            value = params[name] if given else default
            if value is not seen[i]:
                seen[i] = value
                made[i] = value if process is None else process(value)
        out.append(tuple(made))
    return out


_NOTHING = object()


def _row(processors: tuple[Processor, ...], row: Sequence[Any]) -> tuple[Any, ...]:
    return tuple(
        value if process is None else process(value)
        for process, value in zip(processors, row, strict=True)
    )


def _wrapped(dialect: Dialect, sql: str, params: Any, error: Exception) -> Exception:
    """``error`` as ``Connection.execute`` raises it: a driver's error as SQLAlchemy's
    ``DBAPIError`` of the same kind, a bind processor's error as a ``StatementError``."""
    return DBAPIError.instance(sql, params, error, dialect.loaded_dbapi.Error, dialect=dialect)
