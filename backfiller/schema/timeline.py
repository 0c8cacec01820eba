"""A backfill's runs over time, with its counts and partition statuses read at the same moment:
what the UI's timeline, counts, strip and runs table are all drawn from."""

from __future__ import annotations

from datetime import datetime

import strawberry

from backfiller.schema.backfills import BackfillCounts, PartitionStatusRange
from backfiller.schema.enums import BackfillStatus, RunFailureReason, RunStatus

MAX_TIMELINE_RUNS = 20_000


@strawberry.type(
    description="Runs as columns: the i-th item of every list is the i-th run, newest first. "
    "A ranged run is one run (its first partition's key). Times are seconds since the epoch "
    "(UTC), null while not reached."
)
class TimelineRuns:
    ids: list[strawberry.ID]
    jobs: list[str] = strawberry.field(description="The job, or the asset, of each run.")
    partition_keys: list[str]
    attempts: list[int]
    statuses: list[RunStatus]
    workers: list[str | None] = strawberry.field(
        description="`host:pid` of the worker process that ran it; null until it starts."
    )
    queued_at: list[float]
    started_at: list[float | None]
    ended_at: list[float | None]
    failure_reasons: list[RunFailureReason | None] = strawberry.field(
        description="Why each failed run failed; null otherwise."
    )
    error_messages: list[str | None] = strawberry.field(
        description="The exception's type and message of each failed run; null otherwise."
    )


@strawberry.type(
    description="One consistent read of a backfill: its status, counts, partition status "
    "ranges and newest runs, all from the same snapshot of the database, so that they agree."
)
class RunTimeline:
    read_at: datetime
    status: BackfillStatus
    counts: BackfillCounts
    partition_status_ranges: list[PartitionStatusRange] = strawberry.field(
        description="As `Backfill.partitionStatusRanges`; empty for an asset backfill (see "
        "`Backfill.assets`)."
    )
    runs: TimelineRuns
    total_runs: int = strawberry.field(description="Runs of the backfill in all.")
    truncated: bool = strawberry.field(
        description="Whether older runs were left out (more than `lastRuns`)."
    )
