"""Public return types of the client: frozen, fully typed, independent of the server's code.

They mirror the public GraphQL contract (v1), not the server's storage, so they only grow.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from backfiller_client.errors import UserErrorDetail
from backfiller_client.requests import (
    BackfillRequest,
    Order,
    PartitionSelection,
    Reprocess,
)


class BackfillStatus(enum.StrEnum):
    """Where a backfill is in its life (complete since v1)."""

    REQUESTED = "REQUESTED"
    RUNNING = "RUNNING"
    PAUSED = "PAUSED"
    CANCELING = "CANCELING"
    CANCELED = "CANCELED"
    COMPLETED_SUCCESS = "COMPLETED_SUCCESS"
    COMPLETED_FAILED = "COMPLETED_FAILED"
    FAILED = "FAILED"

    @property
    def is_finished(self) -> bool:
        """Whether the backfill will never change again."""
        return self in _FINISHED


_FINISHED = frozenset(
    {
        BackfillStatus.CANCELED,
        BackfillStatus.COMPLETED_SUCCESS,
        BackfillStatus.COMPLETED_FAILED,
        BackfillStatus.FAILED,
    }
)


class PartitionStatus(enum.StrEnum):
    """The status of one partition inside one backfill."""

    PENDING = "PENDING"
    QUEUED = "QUEUED"
    RUNNING = "RUNNING"
    SUCCEEDED = "SUCCEEDED"
    FAILED = "FAILED"
    CANCELED = "CANCELED"
    SKIPPED = "SKIPPED"


class RunStatus(enum.StrEnum):
    """The status of one run (one attempt of one partition)."""

    QUEUED = "QUEUED"
    RUNNING = "RUNNING"
    SUCCESS = "SUCCESS"
    FAILED = "FAILED"
    CANCELED = "CANCELED"


class TriggerOutcome(enum.StrEnum):
    """What an evaluation of a trigger ended with."""

    LAUNCHED = "LAUNCHED"
    SKIPPED = "SKIPPED"
    FAILED = "FAILED"


@dataclass(frozen=True, slots=True)
class BackfillCounts:
    """Partitions of a backfill in each status; the seven statuses add up to ``total``."""

    total: int
    pending: int
    queued: int
    running: int
    succeeded: int
    failed: int
    canceled: int
    skipped: int

    @property
    def done(self) -> int:
        """Partitions in a final status."""
        return self.succeeded + self.failed + self.canceled + self.skipped

    @property
    def percent_done(self) -> float:
        """``done / total`` as a percentage (100 for an empty backfill)."""
        return 100.0 if self.total == 0 else round(100.0 * self.done / self.total, 2)


@dataclass(frozen=True, slots=True)
class Backfill:
    """A backfill and its progress, as the server reported it when it was read."""

    id: str
    job: str | None
    partitions: PartitionSelection
    status: BackfillStatus
    counts: BackfillCounts
    reprocess: Reprocess
    order: Order
    max_concurrent_runs: int | None
    run_config: Mapping[str, Any] | None
    tags: Mapping[str, str]
    title: str | None
    description: str | None
    error: str | None
    creator: str | None
    parent_id: str | None
    created_at: datetime
    started_at: datetime | None
    ended_at: datetime | None
    updated_at: datetime

    @property
    def is_finished(self) -> bool:
        """Whether the backfill will never change again."""
        return self.status.is_finished


@dataclass(frozen=True, slots=True)
class SkippedPartition:
    key: str
    reason: str


@dataclass(frozen=True, slots=True)
class Preview:
    """What launching a request would do. Nothing was written."""

    job: str
    total: int
    runs: int
    skipped: int
    first_partitions: tuple[str, ...]
    skipped_partitions: tuple[SkippedPartition, ...]


@dataclass(frozen=True, slots=True)
class Run:
    """One attempt to run a job for one partition."""

    id: str
    backfill_id: str
    job: str
    partition_key: str
    attempt: int
    status: RunStatus
    failure_reason: str | None
    error_message: str | None
    queued_at: datetime
    started_at: datetime | None
    ended_at: datetime | None
    duration_seconds: float | None
    partition_keys: tuple[str, ...] = ()
    """Every partition the run covers, in key order: the whole range of a ranged run (a job
    with a backfill policy), whose ``partition_key`` is the first; ``(partition_key,)``
    otherwise (also when the server predates ranged runs)."""


@dataclass(frozen=True, slots=True)
class BackfillEvent:
    """Something that happened to a backfill (launched, paused, run failed, ...)."""

    kind: str
    at: datetime
    actor: str | None
    message: str | None


@dataclass(frozen=True, slots=True)
class PartitionStatusRange:
    """Consecutive partitions of a backfill that share one status."""

    status: PartitionStatus
    start_key: str
    end_key: str
    start_index: int
    count: int


@dataclass(frozen=True, slots=True)
class PartitionsInfo:
    """A job's partitions definition."""

    kind: str
    cadence: str | None
    start: datetime | None
    end: datetime | None
    timezone: str | None
    cron: str | None
    key_format: str | None
    dynamic_name: str | None
    count: int


@dataclass(frozen=True, slots=True)
class Job:
    """A partitioned job defined on the server."""

    name: str
    description: str | None
    partitions: PartitionsInfo
    max_concurrent_runs: int | None
    timeout_seconds: float | None
    max_retries: int
    retry_delay_seconds: float
    config_schema: Mapping[str, Any] | None
    tags: Mapping[str, str]


@dataclass(frozen=True, slots=True)
class TriggerRequestResult:
    """One backfill request a trigger returned, and what became of it.

    Attributes:
        request: The request, as the trigger built it.
        preview: What launching it does (always given for a dry run; None when refused).
        backfill_id: The backfill it launched (or found by idempotency key); None on a dry run.
        errors: Why the server refused it, if it did.
    """

    request: BackfillRequest
    preview: Preview | None
    backfill_id: str | None
    errors: tuple[UserErrorDetail, ...]


@dataclass(frozen=True, slots=True)
class TriggerEvaluation:
    """One evaluation of a trigger: on a button, on its interval, or from a job."""

    id: str
    trigger: str
    outcome: TriggerOutcome
    dry_run: bool
    skip_reason: str | None
    error_message: str | None
    duration_seconds: float
    actor: str | None
    evaluated_at: datetime
    backfills: tuple[Backfill, ...]
    requests: tuple[TriggerRequestResult, ...]


@dataclass(frozen=True, slots=True)
class Trigger:
    """A trigger defined on the server."""

    name: str
    description: str | None
    enabled: bool
    interval_seconds: float | None
    timeout_seconds: float
    last_evaluation: TriggerEvaluation | None


__all__ = [
    "Backfill",
    "BackfillCounts",
    "BackfillStatus",
    "Job",
    "PartitionStatus",
    "PartitionStatusRange",
    "PartitionsInfo",
    "Preview",
    "Run",
    "RunStatus",
    "SkippedPartition",
    "Trigger",
    "TriggerEvaluation",
    "TriggerOutcome",
    "TriggerRequestResult",
]
