"""Public types of jobs and their partitions definitions."""

from __future__ import annotations

from datetime import datetime
from typing import Any

import strawberry

from backfiller.schema.backfills import PartitionStatusRange, source_of
from backfiller.schema.common import JSON, PageInfo, Tag
from backfiller.schema.enums import PartitionsKind


@strawberry.type
class PartitionKeyEdge:
    cursor: str
    node: str


@strawberry.type
class PartitionKeyConnection:
    edges: list[PartitionKeyEdge]
    page_info: PageInfo
    total_count: int

    @strawberry.field
    def nodes(self) -> list[str]:
        return [e.node for e in self.edges]


@strawberry.type(description="The set of partition keys of a job.")
class PartitionsDefinition:
    kind: PartitionsKind
    cadence: str | None = strawberry.field(
        description="hourly, daily, weekly, monthly or cron, for time partitions."
    )
    start: datetime | None
    end: datetime | None = strawberry.field(
        description="Exclusive end; null when open-ended (ends at the last complete window)."
    )
    timezone: str | None
    cron: str | None
    key_format: str | None
    dynamic_name: str | None = strawberry.field(
        description="The name of a dynamic partitions definition, whose keys live in the database."
    )
    _job: strawberry.Private[str]

    @strawberry.field(description="How many partitions there are now.")
    async def count(self, info: strawberry.Info[Any, Any]) -> int:
        return await source_of(info).job_partition_count(self._job)

    @strawberry.field(description="The partition keys, oldest first.")
    async def keys(
        self, info: strawberry.Info[Any, Any], first: int = 100, after: str | None = None
    ) -> PartitionKeyConnection:
        return await source_of(info).job_partition_keys(self._job, first, after)


@strawberry.type(
    description="Ranged runs: a backfill runs chunks of consecutive partitions, one run each "
    "(`Run.partitionKeys`). Counts and partition statuses stay per partition."
)
class BackfillPolicy:
    single_run: bool = strawberry.field(
        description="One run over the whole selection (in chunks of `maxPartitionsPerRun` "
        "beyond that many partitions)."
    )
    max_partitions_per_run: int = strawberry.field(
        description="The most partitions one run covers."
    )


@strawberry.type
class RetryPolicy:
    max_retries: int
    delay_seconds: float


@strawberry.type(description="A partitioned job defined in the deployment's definitions.")
class Job:
    name: str
    description: str | None
    partitions: PartitionsDefinition
    retry_policy: RetryPolicy
    max_concurrent_runs: int | None
    timeout_seconds: float | None
    config_schema: JSON | None = strawberry.field(
        description="JSON schema that `runConfig` must match; null when the job takes none."
    )
    tags: list[Tag]
    backfill_policy: BackfillPolicy | None = strawberry.field(
        default=None,
        description="How a backfill of this job groups its partitions into runs; null for "
        "one run per partition.",
    )

    @strawberry.field(
        description="Every partition of the job folded into ranges of its latest status "
        "across all backfills (PENDING where it never ran)."
    )
    async def partition_status_ranges(
        self, info: strawberry.Info[Any, Any]
    ) -> list[PartitionStatusRange]:
        return await source_of(info).job_partition_status_ranges(self.name)
