"""A stored backfill's selection, and the key spaces it is pinned to: the one pinner.

Shared by the launch service, the resolvers and the daemon so that all read a stored
selection, and a job's partition keys, the same way. (Storage only reads the rows: joining
them with a partitions definition is this layer's work.)

:class:`PinCache` keeps each backfill's pin: time and static partitions are pure, so a pin
never changes while the partitions definition stays the same; dynamic partitions live in the
database and a job backfill over them is pinned again after a few seconds, so that a deleted
key makes the backfill FAILED instead of shifting its positions. Every pin is as of the
backfill's launch (``created_at``).
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from cachetools import LRUCache

from backfiller.definitions.asset_graph import AssetGraph
from backfiller.definitions.jobs import JobDefinition
from backfiller.definitions.loading import Definitions
from backfiller.definitions.partitions import KeySpace, PartitionsDefinition, PartitionsKind
from backfiller.domain import BackfillKind
from backfiller.planning import ResolvedSelection, Selection, SelectionProblem, pin_stored_selection
from backfiller.planning.asset_plan import AssetTarget, upstream_needs
from backfiller.storage.engine import Database
from backfiller.storage.records import BackfillRecord
from backfiller.storage.repositories import DynamicPartitionRepository

DYNAMIC_TTL_SECONDS = 5.0
"""How long a pin over dynamic partitions is kept before their keys are read again."""
MAX_CACHED = 1_000
"""Backfills pinned at once, the least recently used evicted beyond."""


async def key_space_of(
    partitions: PartitionsDefinition, now: datetime, database: Database
) -> KeySpace:
    """The partition keys as of ``now``: computed, or read from the database when dynamic."""
    if partitions.kind is not PartitionsKind.DYNAMIC:
        return partitions.key_space(now)
    name = partitions.describe().dynamic_name
    assert name is not None
    async with database.read() as session:
        keys = await DynamicPartitionRepository(session).keys(name)
    return partitions.key_space(now, keys)


def stored_selection(record: BackfillRecord) -> Selection:
    """The selection of a backfill as it was requested."""
    return Selection(
        record.selection_kind,
        record.range_start,
        record.range_end,
        tuple(record.keys) if record.keys is not None else None,
    )


@dataclass(frozen=True, slots=True)
class Pinned:
    """A job backfill's selection pinned to its job's key space."""

    job: JobDefinition
    space: KeySpace
    resolved: ResolvedSelection


@dataclass(frozen=True, slots=True)
class PinnedAssets:
    """An asset backfill's plan pinned to its assets' key spaces, with the graph it follows."""

    graph: AssetGraph
    target: AssetTarget
    spaces: dict[str, KeySpace]

    def needs(self, slot: str) -> list[tuple[str, Sequence[str] | None]]:
        """What slot ``asset/key`` waits for: per upstream asset, its keys (None: all)."""
        return [
            (asset, keys if isinstance(keys, list) else None)
            for asset, keys in upstream_needs(self.graph, self.target, self.spaces, slot)
        ]


@dataclass(frozen=True, slots=True)
class Unpinnable:
    """Why a stored backfill no longer fits the definitions: it cannot go on."""

    message: str
    """What changed, alone (a retry's refusal says it)."""
    reason: str
    """The message as the backfill's error."""

    @classmethod
    def vanished(cls, message: str) -> Unpinnable:
        return cls(message, f"the partitions of the backfill vanished: {message}")

    @classmethod
    def gone(cls, message: str) -> Unpinnable:
        return cls(message, message)


@dataclass(frozen=True, slots=True)
class _Entry:
    at: float
    token: object
    """What the pin was made from (a partitions fingerprint, or the asset graph): a pin made
    from other definitions is made again."""
    pinned: Pinned | PinnedAssets


class PinCache:
    """Pins by backfill id, for one database. Owned by the process's ``Backend`` (the
    daemon's ``DaemonState``); never shared across databases."""

    def __init__(self, maxsize: int = MAX_CACHED, dynamic_ttl: float = DYNAMIC_TTL_SECONDS) -> None:
        self._entries: LRUCache[int, _Entry] = LRUCache(maxsize)
        self.dynamic_ttl = dynamic_ttl

    def _cached(
        self, backfill_id: int, token: object, dynamic: bool
    ) -> Pinned | PinnedAssets | None:
        entry = self._entries.get(backfill_id)
        if entry is None or (entry.token is not token and entry.token != token):
            return None
        if dynamic and time.monotonic() - entry.at >= self.dynamic_ttl:
            return None
        return entry.pinned

    def _keep(self, backfill_id: int, token: object, pinned: Pinned | PinnedAssets) -> None:
        self._entries[backfill_id] = _Entry(time.monotonic(), token, pinned)

    async def pin(
        self, database: Database, definitions: Definitions, record: BackfillRecord
    ) -> Pinned | Unpinnable:
        """A job backfill's selection pinned to its job's keys, or why it cannot be."""
        assert record.kind is BackfillKind.JOB
        job = definitions.get_job(record.job_name)
        if job is None:
            return Unpinnable.gone(f"job {record.job_name!r} is no longer in the definitions")
        partitions = job.partitions
        token = partitions.fingerprint()
        dynamic = partitions.kind is PartitionsKind.DYNAMIC
        cached = self._cached(record.id, token, dynamic)
        if isinstance(cached, Pinned) and cached.job is job:
            return cached
        space = await key_space_of(partitions, record.created_at, database)
        try:
            resolved = pin_stored_selection(
                stored_selection(record), record.total, partitions, space
            )
        except SelectionProblem as problem:
            return Unpinnable.vanished(problem.message)
        pinned = Pinned(job, space, resolved)
        self._keep(record.id, token, pinned)
        return pinned

    async def pin_assets(
        self, database: Database, definitions: Definitions, record: BackfillRecord
    ) -> PinnedAssets | Unpinnable:
        """An asset backfill's plan against the current definitions, or why it cannot run any
        more. Kept while the definitions' graph is the same (dynamic keys included: an asset
        backfill's key spaces are read once)."""
        assert record.kind is BackfillKind.ASSETS and record.asset_target is not None
        graph = definitions.asset_graph
        cached = self._cached(record.id, graph, dynamic=False)
        if isinstance(cached, PinnedAssets):
            return cached
        target = AssetTarget.from_json(record.asset_target)
        spaces: dict[str, KeySpace] = {}
        for part in target.parts:
            asset = definitions.get_asset(part.name)
            if asset is None:
                return Unpinnable.gone(f"asset {part.name!r} is no longer in the definitions")
            if asset.key_partitions.fingerprint() != part.fingerprint:
                return Unpinnable.gone(
                    f"the partitions of asset {part.name!r} changed since the launch"
                )
            spaces[part.name] = await key_space_of(
                asset.key_partitions, record.created_at, database
            )
        pinned = PinnedAssets(graph, target, spaces)
        self._keep(record.id, graph, pinned)
        return pinned


__all__ = [
    "PinCache",
    "Pinned",
    "PinnedAssets",
    "Unpinnable",
    "key_space_of",
    "stored_selection",
]
