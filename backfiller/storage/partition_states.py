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

import json
import weakref
from collections import defaultdict
from collections.abc import Sequence
from typing import Any, NamedTuple

from sqlalchemy import Connection, Engine, Select, bindparam, case, func, or_, select, text

from backfiller.domain import UNFINISHED_BACKFILL_STATES, RunState
from backfiller.storage.partition_routes import routes_of
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


JobVersion = tuple[int, int | None, int, int, int | None]
"""The floor of the backfills read, a job's newest run id among them, its numbers of queued
and running runs, and its newest mark's id (see :func:`job_versions`)."""


def job_versions(conn: Connection, jobs: Sequence[str]) -> dict[str, JobVersion]:
    """Each job's version: its newest run's id and how many of its runs are queued and
    running, among the runs of the backfills from a floor up (:func:`version_floor`), three
    index probes a job and a partition read (``(job_name, id)``, and the index of active
    runs), with the floor itself.

    Every change of a job's partition states comes with a change of its runs that changes
    this: a claim adds a run (a newer id); with no new run, the queued runs only decrease
    (a start or an end of a queued run) and otherwise only the running ones do (an end).
    So states read after a version are at least as new as it, and a version unchanged since
    means states unchanged since (pruning, which deletes finished runs only, can change the
    version without the states: a needless new read, never a stale one). Only the runs of a
    backfill that is not over change, and every such backfill is above the floor; a backfill
    that ends is read until the floor moves above it, which changes the version. A mark by
    hand (``storage.marks``) changes states without a run but adds ``partition_marks`` rows:
    the job's newest mark id is the last part of its version."""
    if not jobs:
        return {}
    floor = version_floor(conn)
    params = {"jobs": _names_param(conn, jobs), "floor": floor}
    rows = conn.execute(text(_VERSIONS[conn.dialect.name]), params)
    return {
        str(job): (floor, newest, int(queued), int(running), marked)
        for job, newest, queued, running, marked in rows
    }


def version_floor(conn: Connection) -> int:
    """The lowest backfill id whose runs :func:`job_versions` reads: on PostgreSQL, the first
    id of the history range (``storage.history_partitions``) that holds the oldest backfill
    not over (or the next to be launched), so that the ranges below it, whose backfills are
    all over and whose runs will not change, are not read; 0 on SQLite (one table)."""
    if conn.dialect.name != "postgresql":
        return 0
    first = conn.execute(_FLOOR, {"open": _OPEN}).one()
    newest, oldest_open = first
    lowest = oldest_open if oldest_open is not None else int(newest or 0) + 1
    return routes_of(conn).low_of(conn, int(lowest))


_OPEN = sorted(s.value for s in UNFINISHED_BACKFILL_STATES)
_FLOOR = text(
    "SELECT (SELECT max(id) FROM backfills), "
    "(SELECT min(id) FROM backfills WHERE status = ANY(CAST(:open AS varchar[])))"
)


def _names_param(conn: Connection, jobs: Sequence[str]) -> object:
    return list(jobs) if conn.dialect.name == "postgresql" else json.dumps(list(jobs))


_OF_JOB = "r.job_name = j.name AND r.backfill_id >= :floor"
_ACTIVE = f"{_OF_JOB} AND r.status IN ('queued', 'running')"
_VERSION_COLUMNS = (
    f"j.name, (SELECT MAX(r.id) FROM runs r WHERE {_OF_JOB}), "
    f"(SELECT COUNT(CASE WHEN r.status = 'queued' THEN 1 END) FROM runs r WHERE {_ACTIVE}), "
    f"(SELECT COUNT(CASE WHEN r.status = 'running' THEN 1 END) FROM runs r WHERE {_ACTIVE}), "
    "(SELECT MAX(m.id) FROM partition_marks m WHERE m.job_name = j.name)"
)
_VERSIONS = {
    "postgresql": f"SELECT {_VERSION_COLUMNS} FROM unnest(CAST(:jobs AS varchar[])) AS j(name)",
    "sqlite": f"SELECT {_VERSION_COLUMNS} FROM (SELECT value AS name FROM json_each(:jobs)) j",
}


_known: weakref.WeakKeyDictionary[Engine, dict[str, tuple[JobVersion, list[Island]]]]
_known = weakref.WeakKeyDictionary()
"""Each job's islands as last read, with the job's version then, per engine (database)."""


def cached_islands(conn: Connection, jobs: Sequence[str]) -> dict[str, list[Island]]:
    """:func:`status_islands` of ``jobs``, read again only for the jobs whose version changed
    since they were last read (the versions first: islands read after a version are at least
    as new as it)."""
    known = _known.setdefault(conn.engine, {})
    versions = job_versions(conn, jobs)
    stale = [job for job in jobs if job not in known or known[job][0] != versions.get(job)]
    if stale:
        fresh = status_islands(conn, stale)
        for job in stale:
            known[job] = (versions[job], fresh.get(job, []))
    return {job: known[job][1] for job in jobs}
