"""Public types of assets and of asset backfills' progress and previews.

The layer below answers through :class:`AssetReads`, which the resolvers put in the request
context as ``context.assets``; this module never learns how data is stored.
"""

from __future__ import annotations

from typing import Any, Protocol

import strawberry

from backfiller.schema.backfills import BackfillCounts, PartitionStatusRange, source_of
from backfiller.schema.enums import RunStatus
from backfiller.schema.jobs import BackfillPolicy, PartitionsDefinition


@strawberry.type(description="One asset of an asset backfill: its counts and statuses there.")
class BackfillAsset:
    name: str
    level: int = strawberry.field(
        description="Its dependency level in the backfill: 0 for roots, 1 + its upstream's."
    )
    counts: BackfillCounts
    partition_status_ranges: list[PartitionStatusRange] = strawberry.field(
        description="Its partitions folded into ranges of one status, oldest first."
    )


@strawberry.type(description="What a launch would do to one asset.")
class AssetPreview:
    name: str
    level: int = strawberry.field(description="Its dependency level (0 for roots).")
    total: int = strawberry.field(description="Its partitions in the backfill.")
    runs: int = strawberry.field(description="Partitions that would run (total - skipped).")
    skipped: int
    ranged_runs: int | None = strawberry.field(
        default=None,
        description="For an asset with a backfill policy, how many runs its `runs` partitions "
        "form (chunks of consecutive partitions); null for one run per partition.",
    )


@strawberry.type(description="A partition of an asset and the status of its latest run.")
class AssetPartition:
    key: str
    status: RunStatus


@strawberry.type(description="A partitioned (or unpartitioned) data product of the graph.")
class Asset:
    name: str
    description: str | None
    partitions: PartitionsDefinition | None = strawberry.field(
        description="Null for an unpartitioned asset."
    )
    upstream: list[str] = strawberry.field(description="The assets it depends on directly.")
    downstream: list[str] = strawberry.field(description="The assets that depend on it directly.")
    level: int = strawberry.field(description="Its dependency level in the whole graph.")
    backfill_policy: BackfillPolicy | None = strawberry.field(
        default=None,
        description="How an asset backfill groups its partitions into runs; null for one run "
        "per partition.",
    )

    @strawberry.field(
        description="Its partitions that ran, with their latest run's status (any backfill), "
        "by key; `after` is the last key of the previous page. `first` is at most 1000."
    )
    async def latest_statuses(
        self, info: strawberry.Info[Any, Any], first: int = 100, after: str | None = None
    ) -> list[AssetPartition]:
        return await asset_reads_of(info).asset_partitions(self.name, first, after)

    @strawberry.field(
        description="Every partition of the asset folded into ranges of its latest run's "
        "status across all backfills (PENDING where it never ran), as for a job; an "
        "unpartitioned asset has one partition."
    )
    async def partition_status_ranges(
        self, info: strawberry.Info[Any, Any]
    ) -> list[PartitionStatusRange]:
        return await source_of(info).job_partition_status_ranges(self.name)


class AssetReads(Protocol):
    async def backfill_assets(self, pk: int) -> list[BackfillAsset]: ...

    async def asset_partitions(
        self, name: str, first: int, after: str | None
    ) -> list[AssetPartition]: ...

    def is_asset(self, name: str) -> bool: ...


def asset_reads_of(info: strawberry.Info[Any, Any]) -> AssetReads:
    reads: AssetReads = info.context.assets
    return reads
