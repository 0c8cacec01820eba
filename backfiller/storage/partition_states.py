"""Reads of ``partition_states`` (the latest run outcome of each (job, partition)) for the API.

``partition_states`` is the summary of a partition's history: one row per (job, partition)
ever run, whatever the number of its runs, kept by the daemon in the transactions that change
runs. Its keys sort in code-point order on every database (``COLLATE "C"`` on PostgreSQL,
SQLite's binary order), the order of Python's ``str``, so that a read in key order is a walk of
the primary key that Python can follow.

:func:`status_islands` folds a job's states into runs of one status in key order in SQL: it
returns the first and last key of each run and its size, a few rows where the states may be
millions. Synchronous functions of a Core connection (``Database.query``).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from typing import Any, NamedTuple

from sqlalchemy import Connection, Select, bindparam, case, func, or_, select

from backfiller.domain import RunState
from backfiller.storage.records import PartitionStateRecord, table_of
from backfiller.storage.value_lists import DIALECTS, one_of_list

_STATES = table_of(PartitionStateRecord)


class Island(NamedTuple):
    """Consecutive states of one job (in key order) with one status."""

    status: RunState
    first_key: str
    last_key: str
    size: int


def _islands_statement(dialect: str) -> Select[Any]:
    """The rows of ``jobs``' states where a run of one status starts or ends (both for a run
    of one key), in key order, with their row number and which edge they are."""
    key, status, job = _STATES.c.partition_key, _STATES.c.status, _STATES.c.job_name
    marked = (
        select(
            job,
            key,
            status,
            func.row_number().over(partition_by=job, order_by=key).label("n"),
            func.lag(status).over(partition_by=job, order_by=key).label("before"),
            func.lead(status).over(partition_by=job, order_by=key).label("after"),
        )
        .where(one_of_list(dialect, job, "jobs"))
        .subquery()
    )
    starts = or_(marked.c.before.is_(None), marked.c.before != marked.c.status)
    ends = or_(marked.c.after.is_(None), marked.c.after != marked.c.status)
    return (
        select(
            marked.c.job_name,
            marked.c.partition_key,
            marked.c.status,
            marked.c.n,
            case((starts, 1), else_=0).label("starts"),
            case((ends, 1), else_=0).label("ends"),
        )
        .where(or_(starts, ends))
        .order_by(marked.c.job_name, marked.c.n)
    )


_ISLANDS = {dialect: _islands_statement(dialect) for dialect in DIALECTS}


def status_islands(conn: Connection, jobs: Sequence[str]) -> dict[str, list[Island]]:
    """Each job's states folded into islands of one status, in key order: one statement for
    every job, which returns only the rows where the status changes."""
    out: dict[str, list[Island]] = defaultdict(list)
    if not jobs:
        return out
    rows = conn.execute(_ISLANDS[conn.dialect.name], {"jobs": list(jobs)}).all()
    first: tuple[str, int] = ("", 0)
    for job, key, status, n, starts, ends in rows:
        if starts:
            first = (str(key), int(n))
        if ends:
            count = int(n) - first[1] + 1
            out[str(job)].append(Island(RunState(status), first[0], str(key), count))
    return out


def states_between(
    conn: Connection, *, job: str, first_key: str | None = None, last_key: str | None = None
) -> list[tuple[str, RunState]]:
    """(key, status) of a job's states, in key order, between two keys (inclusive)."""
    stmt = select(_STATES.c.partition_key, _STATES.c.status).where(
        _STATES.c.job_name == bindparam("job")
    )
    params: dict[str, object] = {"job": job}
    if first_key is not None:
        stmt = stmt.where(_STATES.c.partition_key >= bindparam("first"))
        params["first"] = first_key
    if last_key is not None:
        stmt = stmt.where(_STATES.c.partition_key <= bindparam("last"))
        params["last"] = last_key
    rows = conn.execute(stmt.order_by(_STATES.c.partition_key), params).all()
    return [(str(k), RunState(s)) for k, s in rows]
