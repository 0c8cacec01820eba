"""Public enums. Declared apart from the stored states in ``backfiller.domain``.

Each is complete from v1 on: clients never meet a value they were not told about.
"""

from __future__ import annotations

import enum

import strawberry


@strawberry.enum(description="Where a backfill is in its life.")
class BackfillStatus(enum.Enum):
    REQUESTED = strawberry.enum_value("REQUESTED", description="Launched; no run started yet.")
    RUNNING = strawberry.enum_value("RUNNING", description="The daemon is launching runs.")
    PAUSED = strawberry.enum_value(
        "PAUSED", description="No new runs start; runs in flight finish."
    )
    CANCELING = strawberry.enum_value(
        "CANCELING", description="Cancel requested; runs in flight are being stopped."
    )
    CANCELED = strawberry.enum_value("CANCELED", description="Canceled; nothing runs any more.")
    COMPLETED_SUCCESS = strawberry.enum_value(
        "COMPLETED_SUCCESS", description="Every partition succeeded or was skipped."
    )
    COMPLETED_FAILED = strawberry.enum_value(
        "COMPLETED_FAILED", description="Done, and some partition failed after its retries."
    )
    FAILED = strawberry.enum_value(
        "FAILED",
        description="A service-side fault stopped it (the job or its partitions vanished); "
        "see `error`.",
    )


@strawberry.enum(description="The status of one partition inside one backfill.")
class PartitionStatus(enum.Enum):
    PENDING = "PENDING"
    QUEUED = "QUEUED"
    RUNNING = "RUNNING"
    SUCCEEDED = "SUCCEEDED"
    FAILED = "FAILED"
    CANCELED = "CANCELED"
    SKIPPED = "SKIPPED"


@strawberry.enum(description="The status of one run (one attempt of one partition).")
class RunStatus(enum.Enum):
    QUEUED = "QUEUED"
    RUNNING = "RUNNING"
    SUCCESS = "SUCCESS"
    FAILED = "FAILED"
    CANCELED = "CANCELED"
    SKIPPED = strawberry.enum_value(
        "SKIPPED",
        description=(
            "Never a run's: a partition's latest status (`AssetPartition.status`) when it was "
            "marked SKIPPED by hand (`markPartitions`)."
        ),
    )


@strawberry.enum(description="Why a run failed.")
class RunFailureReason(enum.Enum):
    ERROR = strawberry.enum_value("ERROR", description="The job raised an exception.")
    TIMEOUT = strawberry.enum_value("TIMEOUT", description="The job ran past its timeout.")
    WORKER_LOST = strawberry.enum_value(
        "WORKER_LOST", description="The process running the job died or vanished."
    )


@strawberry.enum(description="Which partitions of the selection run again.")
class Reprocess(enum.Enum):
    MISSING = strawberry.enum_value(
        "MISSING", description="Only partitions that never ran (default)."
    )
    FAILED_AND_MISSING = strawberry.enum_value(
        "FAILED_AND_MISSING", description="Partitions that never ran or whose latest run failed."
    )
    ALL = strawberry.enum_value("ALL", description="Every partition, whatever ran before.")


@strawberry.enum(description="In which order partitions are launched.")
class BackfillOrder(enum.Enum):
    OLDEST_FIRST = "OLDEST_FIRST"
    NEWEST_FIRST = "NEWEST_FIRST"


@strawberry.enum(description="Why a partition of a selection will not run.")
class SkipReason(enum.Enum):
    ALREADY_SUCCEEDED = strawberry.enum_value(
        "ALREADY_SUCCEEDED", description="Its latest run, in any backfill, succeeded."
    )
    ALREADY_FAILED = strawberry.enum_value(
        "ALREADY_FAILED",
        description="Its latest run failed and `reprocess` is MISSING.",
    )
    UPSTREAM_FAILED = strawberry.enum_value(
        "UPSTREAM_FAILED",
        description="An upstream asset partition it depends on failed after its retries.",
    )
    MARKED_SKIPPED = strawberry.enum_value(
        "MARKED_SKIPPED",
        description=(
            "It was marked SKIPPED by hand (`markPartitions`); only `reprocess: ALL` runs it."
        ),
    )


@strawberry.enum(description="The kind of a partitions definition.")
class PartitionsKind(enum.Enum):
    TIME = "TIME"
    STATIC = "STATIC"
    DYNAMIC = "DYNAMIC"


@strawberry.enum(description="Something that happened to a backfill.")
class BackfillEventKind(enum.Enum):
    LAUNCHED = "LAUNCHED"
    STARTED = "STARTED"
    PAUSED = "PAUSED"
    RESUMED = "RESUMED"
    CANCEL_REQUESTED = "CANCEL_REQUESTED"
    CANCELED = "CANCELED"
    RUN_FAILED = "RUN_FAILED"
    RETRIED = "RETRIED"
    COMPLETED = "COMPLETED"
    FAILED = "FAILED"
    UPDATED = strawberry.enum_value(
        "UPDATED",
        description="`updateBackfill` changed its concurrency, priority, title or description.",
    )


@strawberry.enum(description="Which partitions of a backfill `retryBackfill` runs again.")
class RetryInclude(enum.Enum):
    FAILED = strawberry.enum_value("FAILED", description="Partitions that failed.")
    CANCELED = strawberry.enum_value("CANCELED", description="Partitions that were canceled.")
    NOT_RUN = strawberry.enum_value(
        "NOT_RUN", description="Partitions that never started (pending or queued when it ended)."
    )
