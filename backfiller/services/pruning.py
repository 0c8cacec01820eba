"""Pruning: the history past its keeping goes, one short transaction at a time.

The daemons prune a little at every retention tick (``daemon/retention.py``), within a time
budget so that their other tasks wait for it no longer than that; ``backfiller db prune``
prunes until nothing expired is left (or counts it, with ``--dry-run``). What goes and what
stays is ``storage.retention``'s; how long each kind of history is kept is
:class:`~backfiller.config.HistorySettings`.
"""

from __future__ import annotations

import asyncio
import time
from collections import Counter
from dataclasses import dataclass
from datetime import datetime, timedelta
from functools import partial

from backfiller.config import HistorySettings
from backfiller.storage import Database
from backfiller.storage.archive import Archive
from backfiller.storage.history_partitions import (
    ARCHIVED,
    Dropped,
    Range,
    archive_batch,
    drop_range,
    droppable,
    measure_droppable,
    partitioned,
)
from backfiller.storage.log_store import LogStore, log_store_of
from backfiller.storage.retention import (
    Deleted,
    count_prunable,
    expired_backfills,
    prune_audit,
    prune_backfill,
    prune_evaluations,
)

DROP_TRIES = 10
"""How many times a range's drop is tried in one call before it is left to the next."""
DROP_PAUSE_SECONDS = 0.1
"""The pause between two tries (each waits at most ``history_partitions.LOCK_TIMEOUT``)."""


@dataclass(frozen=True, slots=True)
class Cutoffs:
    """What ended (backfills), was evaluated (trigger evaluations) or happened (audit
    entries) before these times goes; None keeps that kind of history."""

    backfills: datetime | None
    evaluations: datetime | None
    audit: datetime | None

    @classmethod
    def of(cls, settings: HistorySettings, now: datetime) -> Cutoffs:
        def before(days: float | None) -> datetime | None:
            return None if days is None else now - timedelta(days=days)

        return cls(
            before(settings.backfill_days),
            before(settings.trigger_evaluation_days),
            before(settings.audit_days),
        )


class Pruner:
    """Deletes expired history from one database (see the module's docstring)."""

    def __init__(
        self,
        database: Database,
        settings: HistorySettings,
        log_store: LogStore | None = None,
    ) -> None:
        self.database = database
        self.settings = settings
        self.archive = Archive(settings.archive_url) if settings.archive_url else None
        self.log_store = log_store if log_store is not None else log_store_of(settings.log_store)
        self.dropped: list[Dropped] = []
        """The history ranges dropped (or, after :meth:`count`, that would be)."""
        self._archive_cursor: dict[tuple[Range, str], int | None] = {}
        """How far each range's rows are archived (their last id; None: all of them)."""

    async def count(self, cutoffs: Cutoffs) -> dict[str, int]:
        """The rows of each table that :meth:`prune` would delete now (the rows of the ranges
        it would drop among them, and those ranges in :attr:`dropped`)."""
        counts = Counter(
            await self.database.query(
                lambda conn: count_prunable(
                    conn, cutoffs.backfills, cutoffs.evaluations, cutoffs.audit
                )
            )
        )
        if cutoffs.backfills is not None:
            cutoff = cutoffs.backfills
            for dropped in await self.database.query(partial(measure_droppable, cutoff=cutoff)):
                counts.update(dropped.rows)
                self.dropped.append(dropped)
        return dict(counts)

    async def prune(self, cutoffs: Cutoffs, seconds: float | None = None) -> Counter[str]:
        """Delete expired history, a batch a transaction, until none is left or ``seconds``
        have passed (None: until none is left); the rows deleted, by table."""
        deadline = None if seconds is None else time.monotonic() + seconds
        deleted: Counter[str] = Counter()
        if cutoffs.backfills is not None:
            await self._backfills(cutoffs.backfills, deadline, deleted)
            await self._ranges(cutoffs.backfills, deadline, deleted)
        for cutoff, step in (
            (cutoffs.evaluations, prune_evaluations),
            (cutoffs.audit, prune_audit),
        ):
            while cutoff is not None and not _past(deadline):
                done = await self._transact(partial(step, cutoff=cutoff))
                deleted[done.table] += done.rows
                if not done.rows:
                    break
        return deleted

    async def _backfills(
        self, cutoff: datetime, deadline: float | None, deleted: Counter[str]
    ) -> None:
        while not _past(deadline):
            expired = await self.database.query(lambda conn: expired_backfills(conn, cutoff, 16))
            if not expired:
                return
            for pk in expired:
                while not _past(deadline):
                    done = await self._transact(partial(prune_backfill, pk=pk))
                    deleted[done.table] += done.rows
                    if done.table == "backfills":
                        if done.rows:
                            await self.log_store.remove_backfill(pk)
                        break
                if _past(deadline):
                    return

    async def _ranges(
        self, cutoff: datetime, deadline: float | None, deleted: Counter[str]
    ) -> None:
        """Drop the history ranges none of whose backfills is kept (PostgreSQL), each archived
        first if archiving is on."""
        found = await self.database.query(
            lambda conn: droppable(conn, cutoff) if partitioned(conn) else []
        )
        for r in found:
            if _past(deadline) or not await self._archived(r, deadline):
                return
            dropped = await self._drop(r, deadline)
            if dropped is None:
                return  # the tables stayed busy: the next call tries again
            deleted.update(dropped.rows)
            self.dropped.append(dropped)
            for pk in dropped.backfills:  # their lines, where they are not in the database
                await self.log_store.remove_backfill(pk)

    async def _drop(self, r: Range, deadline: float | None) -> Dropped | None:
        """Drop ``r`` (``drop_range``), trying again a few times while the tables' lock is
        not had in time: a daemon's transactions are short, but every one of them takes the
        tables that a drop must have alone."""
        for attempt in range(DROP_TRIES):
            if attempt:
                await asyncio.sleep(DROP_PAUSE_SECONDS)
            dropped = await self.database.transact(partial(drop_range, r=r))
            if dropped is not None or _past(deadline):
                return dropped
        return None

    async def _archived(self, r: Range, deadline: float | None) -> bool:
        """Write ``r``'s rows to the archive (if any), a batch a transaction, resuming where
        an earlier call stopped; whether all are written."""
        archive = self.archive
        if archive is None:
            return True
        batch = self.settings.batch_rows
        for table in ARCHIVED:
            while True:
                after = self._archive_cursor.get((r, table), 0)
                if after is None:
                    break
                if _past(deadline):
                    return False
                write = partial(
                    archive_batch, r=r, table=table, after=after, batch=batch, archive=archive
                )
                last = await self.database.query(write)
                self._archive_cursor[(r, table)] = last
        return True

    async def _transact(self, step: partial[Deleted]) -> Deleted:
        batch, archive = self.settings.batch_rows, self.archive
        return await self.database.transact(lambda conn: step(conn, batch=batch, archive=archive))


def _past(deadline: float | None) -> bool:
    return deadline is not None and time.monotonic() >= deadline
