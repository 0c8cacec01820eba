"""Pinning a stored selection to its key space, cached per backfill.

Time and static partitions are pure, so a backfill's pinned selection never changes and is kept
until the backfill ends; dynamic partitions live in the database and are pinned again after a
few seconds, so a deleted key makes the backfill FAILED instead of shifting its positions.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from cachetools import LRUCache

from backfiller.definitions.jobs import JobDefinition
from backfiller.definitions.partitions import KeySpace, PartitionsKind
from backfiller.planning import ResolvedSelection, SelectionProblem, pin_stored_selection
from backfiller.storage import Database
from backfiller.storage.records import BackfillRecord
from backfiller.storage.selections import key_space_of, stored_selection

DYNAMIC_TTL_SECONDS = 5.0
MAX_CACHED = 1_000


@dataclass(frozen=True, slots=True)
class PinnedSelection:
    space: KeySpace
    resolved: ResolvedSelection
    fingerprint: str


class SelectionVanished(Exception):
    """The backfill's job or partitions are gone from the definitions: it cannot go on."""


class SelectionCache:
    """Pinned selections by backfill id, least recently used evicted past ``MAX_CACHED``."""

    def __init__(self) -> None:
        self._cache: LRUCache[int, tuple[float, PinnedSelection]] = LRUCache(MAX_CACHED)

    async def pin(
        self, database: Database, job: JobDefinition, record: BackfillRecord
    ) -> PinnedSelection:
        """The backfill's selection pinned to its job's keys.

        Raises :class:`SelectionVanished` (with the reason) when that is impossible.
        """
        fingerprint = job.partitions.fingerprint()
        cached = self._cache.get(record.id)
        if cached is not None:
            at, pinned = cached
            fresh = (
                job.partitions.kind is not PartitionsKind.DYNAMIC
                or time.monotonic() - at < DYNAMIC_TTL_SECONDS
            )
            if fresh and pinned.fingerprint == fingerprint:
                return pinned
        partitions = job.partitions
        space = await key_space_of(partitions, record.created_at, database)
        try:
            resolved = pin_stored_selection(
                stored_selection(record), record.total, partitions, space
            )
        except SelectionProblem as problem:
            raise SelectionVanished(
                f"the partitions of the backfill vanished: {problem.message}"
            ) from problem
        pinned = PinnedSelection(space, resolved, fingerprint)
        self._cache[record.id] = (time.monotonic(), pinned)
        return pinned

    def forget(self, backfill_id: int) -> None:
        self._cache.pop(backfill_id, None)
