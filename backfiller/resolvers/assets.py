"""Resolvers of assets: the graph (``Query.assets``, ``asset``), asset backfills' per-asset
progress (``Backfill.assets``) and previews (``previewBackfill`` of an asset target)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

from backfiller import domain
from backfiller.definitions.assets import AssetDefinition
from backfiller.planning.asset_plan import (
    AssetPart,
    AssetTarget,
    asset_prefix_bounds,
    slot_key,
    split_slot_key,
)
from backfiller.resolvers.context import Info, Services
from backfiller.resolvers.jobs import job_from_definition
from backfiller.resolvers.translate import partition_status, run_status
from backfiller.schema.asset_backfills import (
    Asset,
    AssetPartition,
    BackfillAsset,
)
from backfiller.schema.backfills import BackfillCounts, PartitionStatusRange
from backfiller.services.selections import key_space_of
from backfiller.storage.asset_reads import AssetReads
from backfiller.storage.records import BackfillRecord

MAX_LATEST = 1_000

_COUNTED = {
    domain.SlotState.PENDING: "pending",
    domain.SlotState.QUEUED: "queued",
    domain.SlotState.RUNNING: "running",
    domain.SlotState.SUCCEEDED: "succeeded",
    domain.SlotState.FAILED: "failed",
    domain.SlotState.CANCELED: "canceled",
    domain.SlotState.SKIPPED: "skipped",
}


def asset_from_definition(services: Services, asset: AssetDefinition) -> Asset:
    graph = services.definitions.asset_graph
    partitions = job_from_definition(asset.job).partitions if asset.partitions else None
    return Asset(
        name=asset.name,
        description=asset.description,
        partitions=partitions,
        upstream=graph.upstream_of(asset.name),
        downstream=graph.downstream_of(asset.name),
        level=graph.level[asset.name],
        backfill_policy=job_from_definition(asset.job).backfill_policy,
    )


def list_assets(info: Info) -> list[Asset]:
    services = info.context.services
    graph = services.definitions.asset_graph
    return [asset_from_definition(services, graph.assets[n]) for n in graph.order]


def get_asset(info: Info, name: str) -> Asset | None:
    services = info.context.services
    found = services.definitions.get_asset(name)
    return asset_from_definition(services, found) if found is not None else None


class StorageAssetReads:
    """What the public asset types read (``schema.asset_backfills.AssetReads``)."""

    def __init__(self, services: Services) -> None:
        self.services = services

    def is_asset(self, name: str) -> bool:
        return self.services.definitions.get_asset(name) is not None

    async def asset_partitions(
        self, name: str, first: int, after: str | None
    ) -> list[AssetPartition]:
        first = max(0, min(first, MAX_LATEST))
        async with self.services.database.read() as session:
            rows = await AssetReads(session).latest_statuses(name, first, after)
        return [AssetPartition(key=k, status=run_status(s)) for k, s in rows]

    async def backfill_assets(self, pk: int) -> list[BackfillAsset]:
        """Per asset: counts from its slots (grouped by status; the unplanned are pending) and
        its status ranges, from one read of its slots' statuses in position order."""
        async with self.services.database.read() as session:
            record = await session.get(BackfillRecord, pk)
            if record is None or record.asset_target is None:
                return []
            target = AssetTarget.from_json(record.asset_target)
            out: list[BackfillAsset] = []
            graph = self.services.definitions.asset_graph
            levels = graph.levels([n for n in target.assets if n in graph])
            for part in target.parts:
                low, high = asset_prefix_bounds(part.name)
                rows = await AssetReads(session).slot_statuses(pk, low, high)
                tail = await self._unplanned_keys(record, part, len(rows))
                out.append(_backfill_asset(part, levels.get(part.name, 0), rows, tail))
        return out

    async def _unplanned_keys(
        self, record: BackfillRecord, part: AssetPart, planned: int
    ) -> tuple[str, str] | None:
        """The first and last keys of the partitions of ``part`` the daemon has not planned yet
        (the planning cursor runs through an asset's partitions in order), or None."""
        asset = self.services.definitions.get_asset(part.name)
        if planned >= part.count or asset is None:
            return None
        space = await key_space_of(asset.key_partitions, record.created_at, self.services.database)
        return part.key_at(planned, space), part.key_at(part.count - 1, space)


def _backfill_asset(
    part: AssetPart,
    level: int,
    rows: Sequence[tuple[str, domain.SlotState]],
    unplanned: tuple[str, str] | None,
) -> BackfillAsset:
    """An asset's counts and status ranges: its slots in position order, then a PENDING range
    of the partitions not planned yet (``unplanned``: their first and last keys)."""
    counted: Counter[str] = Counter()
    ranges: list[PartitionStatusRange] = []
    for i, (stored_key, state) in enumerate(rows):
        counted[_COUNTED[state]] += 1
        key = split_slot_key(stored_key)[1]
        last = ranges[-1] if ranges else None
        public = partition_status(state)
        if last is not None and last.status == public:
            last.end_key = key
            last.count += 1
        else:
            ranges.append(
                PartitionStatusRange(
                    status=public, start_key=key, end_key=key, start_index=i, count=1
                )
            )
    counted["pending"] += part.count - len(rows)
    if unplanned is not None:
        ranges.append(
            PartitionStatusRange(
                status=partition_status(domain.SlotState.PENDING),
                start_key=unplanned[0],
                end_key=unplanned[1],
                start_index=len(rows),
                count=part.count - len(rows),
            )
        )
    counts = BackfillCounts.of(
        total=part.count,
        pending=counted["pending"],
        queued=counted["queued"],
        running=counted["running"],
        succeeded=counted["succeeded"],
        failed=counted["failed"],
        canceled=counted["canceled"],
        skipped=counted["skipped"],
    )
    return BackfillAsset(name=part.name, level=level, counts=counts, partition_status_ranges=ranges)


async def asset_status_ranges(services: Services, pk: int) -> list[PartitionStatusRange]:
    """An asset backfill's status ranges: each asset's, in dependency order, keyed
    ``asset/partition``, with ``startIndex`` counted across the assets."""
    ranges: list[PartitionStatusRange] = []
    offset = 0
    for asset in await StorageAssetReads(services).backfill_assets(pk):
        ranges += [
            PartitionStatusRange(
                status=r.status,
                start_key=slot_key(asset.name, r.start_key),
                end_key=slot_key(asset.name, r.end_key),
                start_index=offset + r.start_index,
                count=r.count,
            )
            for r in asset.partition_status_ranges
        ]
        offset += asset.counts.total
    return ranges


__all__ = [
    "StorageAssetReads",
    "get_asset",
    "list_assets",
]
