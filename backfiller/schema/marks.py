"""Public types of partitions marked by hand: ``markPartitions`` and ``partitionMarks``."""

from __future__ import annotations

import enum
from datetime import datetime

import strawberry

from backfiller.schema.common import UserError
from backfiller.schema.inputs import BackfillTargetInput, PartitionSelectionInput


@strawberry.enum(description="What `markPartitions` records of a partition, without running it.")
class PartitionMarkStatus(enum.Enum):
    SUCCEEDED = strawberry.enum_value(
        "SUCCEEDED",
        description=(
            "Produced out of band: counts as a success everywhere (`reprocess: MISSING` skips "
            "it, asset downstreams run on it)."
        ),
    )
    SKIPPED = strawberry.enum_value(
        "SKIPPED",
        description=(
            "Must not run (a known-bad day): shown SKIPPED; only `reprocess: ALL` runs it; an "
            "asset downstream of it is skipped."
        ),
    )


@strawberry.input(
    description=(
        "Partitions to record as SUCCEEDED or SKIPPED without running them: a target and a "
        "selection as `launchBackfill` takes them."
    )
)
class MarkPartitionsInput:
    target: BackfillTargetInput
    partitions: PartitionSelectionInput
    status: PartitionMarkStatus
    reason: str = strawberry.field(
        description="Why, for the audit log and the partition's history; required, not blank."
    )


@strawberry.type(description="A partition recorded by hand as SUCCEEDED or SKIPPED.")
class PartitionMark:
    id: strawberry.ID
    job: str = strawberry.field(description="The job, or asset, of the partition.")
    partition_key: str
    status: PartitionMarkStatus
    reason: str
    actor: str | None = strawberry.field(description="The token (or user) that marked it.")
    marked_at: datetime


@strawberry.type
class MarkPartitionsPayload:
    marked: int = strawberry.field(
        description="How many partitions were recorded; 0 with `userErrors`."
    )
    running_partitions: list[str] = strawberry.field(
        description=(
            "With PARTITIONS_RUNNING: the partitions (`asset/key` for assets) that a backfill "
            "runs now (a QUEUED or RUNNING run); at most 100. Nothing was marked."
        )
    )
    user_errors: list[UserError]
