"""Run log lines as the daemon writes them: into ``run_logs``, or into the log store's files.

Which one is the :class:`~backfiller.storage.log_store.LogStore` of the session's database
(``Database.log_store``, in the session's ``info``). Files are written before the results'
rows are locked, so a slow object store never holds a run's row; a batch written again (its
transaction retried) replaces its own file (``storage.log_store``).
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Protocol

from sqlalchemy import insert

from backfiller.storage.execution.common import SessionRepository, logs_t
from backfiller.storage.log_store import LogStore, StoredLine
from backfiller.storage.prepared import Prepared


class LogLineIn(Protocol):
    """A line a worker reported (``results.LogEntry``)."""

    @property
    def run_id(self) -> int: ...

    @property
    def at(self) -> datetime: ...

    @property
    def level(self) -> str: ...

    @property
    def message(self) -> str: ...


def _in_files(repo: SessionRepository) -> LogStore | None:
    store = repo.session.info.get("log_store")
    return None if store is None or store.in_database else store


async def write_log_files(repo: SessionRepository, logs: Sequence[LogLineIn]) -> None:
    """With a log store of files, write ``logs`` there (before the results' rows are locked);
    with the database, nothing (:func:`insert_log_rows` does it)."""
    store = _in_files(repo)
    if store is None or not logs:
        return
    found = await repo.backfills_of(e.run_id for e in logs)
    await store.write(
        [
            StoredLine(found[e.run_id], e.run_id, e.at, e.level[:16], e.message)
            for e in logs
            if e.run_id in found
        ]
    )


async def insert_log_rows(repo: SessionRepository, logs: Sequence[LogLineIn]) -> None:
    """With the database as the log store, insert ``logs`` into ``run_logs``."""
    if _in_files(repo) is not None or not logs:
        return
    found = await repo.backfills_of(e.run_id for e in logs)
    rows = [
        {
            "run_id": e.run_id,
            "backfill_id": found[e.run_id],
            "at": e.at,
            "level": e.level[:16],
            "message": e.message,
        }
        for e in logs
        if e.run_id in found
    ]
    await repo.run_many(_LOGS, rows)


_LOGS = Prepared(insert(logs_t))
