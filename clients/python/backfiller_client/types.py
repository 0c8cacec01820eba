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
    AssetSelection,
    BackfillRequest,
    Order,
    PartitionSelection,
    Reprocess,
)


class TolerantEnum(enum.StrEnum):
    """An enum of the public API that reads a value it does not know as ``UNKNOWN``.

    The server may add enum values in any v1 release; a client older than the server then
    reads them as ``UNKNOWN`` instead of failing. ``UNKNOWN`` is never sent to the server.
    """

    @classmethod
    def _missing_(cls, value: object) -> Any:
        return cls["UNKNOWN"]

    @classmethod
    def known(cls, value: str) -> Any:
        """The member named by ``value``; ``ValueError`` for ``UNKNOWN`` or a value not known
        (for what the client sends, where a guess would be wrong)."""
        found = cls(value)
        if found.value == "UNKNOWN" or found.value != str(value):
            raise ValueError(f"{value!r} is not a {cls.__name__}")
        return found


class BackfillStatus(TolerantEnum):
    """Where a backfill is in its life (complete since v1; ``UNKNOWN`` for a later value)."""

    REQUESTED = "REQUESTED"
    RUNNING = "RUNNING"
    PAUSED = "PAUSED"
    CANCELING = "CANCELING"
    CANCELED = "CANCELED"
    COMPLETED_SUCCESS = "COMPLETED_SUCCESS"
    COMPLETED_FAILED = "COMPLETED_FAILED"
    FAILED = "FAILED"
    UNKNOWN = "UNKNOWN"

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


class PartitionStatus(TolerantEnum):
    """The status of one partition inside one backfill (``UNKNOWN`` for a later value)."""

    PENDING = "PENDING"
    QUEUED = "QUEUED"
    RUNNING = "RUNNING"
    SUCCEEDED = "SUCCEEDED"
    FAILED = "FAILED"
    CANCELED = "CANCELED"
    SKIPPED = "SKIPPED"
    UNKNOWN = "UNKNOWN"


class PartitionMarkStatus(TolerantEnum):
    """What a partition was marked by hand (``UNKNOWN`` for a later value)."""

    SUCCEEDED = "SUCCEEDED"
    SKIPPED = "SKIPPED"
    UNKNOWN = "UNKNOWN"


class RunStatus(TolerantEnum):
    """The status of one run (one attempt of one partition); ``UNKNOWN`` for a later value."""

    QUEUED = "QUEUED"
    RUNNING = "RUNNING"
    SUCCESS = "SUCCESS"
    FAILED = "FAILED"
    CANCELED = "CANCELED"
    SKIPPED = "SKIPPED"
    """Only an asset partition's latest status, when it was marked skipped by hand."""
    UNKNOWN = "UNKNOWN"


class TriggerOutcome(TolerantEnum):
    """What an evaluation of a trigger ended with (``UNKNOWN`` for a later value)."""

    LAUNCHED = "LAUNCHED"
    SKIPPED = "SKIPPED"
    FAILED = "FAILED"
    UNKNOWN = "UNKNOWN"


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
    assets: AssetSelection | None = None
    """For an asset backfill, the assets as asked (``job`` is then None)."""
    covered_assets: tuple[str, ...] = ()
    """For an asset backfill, every asset it covers, in dependency order."""
    team: str | None = None
    """The team it acts for (its launcher's); None for none."""
    priority: int = 0
    """Higher priorities are claimed first and get a bigger share of the room."""

    @property
    def is_finished(self) -> bool:
        """Whether the backfill will never change again."""
        return self.status.is_finished


@dataclass(frozen=True, slots=True)
class SkippedPartition:
    key: str
    reason: str


@dataclass(frozen=True, slots=True)
class AssetPreview:
    """What launching a request would do to one asset of an asset backfill."""

    name: str
    level: int
    total: int
    runs: int
    skipped: int


@dataclass(frozen=True, slots=True)
class WaitingPartition:
    """A partition that would wait for another backfill's QUEUED or RUNNING run of it."""

    key: str
    run_id: str
    run_status: RunStatus
    backfill_id: str


@dataclass(frozen=True, slots=True)
class Preview:
    """What launching a request would do. Nothing was written."""

    job: str
    total: int
    runs: int
    skipped: int
    first_partitions: tuple[str, ...]
    skipped_partitions: tuple[SkippedPartition, ...]
    assets: tuple[AssetPreview, ...] | None = None
    """Per asset of an asset backfill, in dependency order; None for a job."""
    waiting: int = 0
    """Of ``runs``, partitions another backfill is running now; 0 from a server that predates it."""
    waiting_partitions: tuple[WaitingPartition, ...] = ()
    """The first of them (at most 20), with the run each would wait for."""


@dataclass(frozen=True, slots=True)
class RunWorker:
    """The worker process a run executed in."""

    host: str
    pid: int | None


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
    worker: RunWorker | None = None
    """Where it executed (the local pool's process or a Celery worker); None until it starts."""
    asset: str | None = None
    """The asset it materializes; None for a job's run."""
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
class PartitionMark:
    """A partition of a job (or asset) recorded by hand as SUCCEEDED or SKIPPED."""

    id: str
    job: str
    partition_key: str
    status: PartitionMarkStatus
    reason: str
    actor: str | None
    marked_at: datetime


@dataclass(frozen=True, slots=True)
class PartitionStatusRange:
    """Consecutive partitions of a backfill that share one status."""

    status: PartitionStatus
    start_key: str
    end_key: str
    start_index: int
    count: int


@dataclass(frozen=True, slots=True)
class BackfillAsset:
    """One asset of an asset backfill: its level, counts and partition status ranges."""

    name: str
    level: int
    counts: BackfillCounts
    partition_status_ranges: tuple[PartitionStatusRange, ...]


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
class Asset:
    """An asset of the server's graph (the latest statuses of its partitions: see
    :meth:`Client.asset_partitions`)."""

    name: str
    description: str | None
    partitions: PartitionsInfo | None
    """None for an unpartitioned asset."""
    upstream: tuple[str, ...]
    downstream: tuple[str, ...]
    level: int


@dataclass(frozen=True, slots=True)
class AssetPartition:
    """A partition of an asset that ran, and the status of its latest run (any backfill)."""

    key: str
    status: RunStatus


class TriggerCatchUp(TolerantEnum):
    """What a cron trigger does with ticks missed while no daemon ran (``UNKNOWN`` for a
    later value)."""

    LATEST = "LATEST"
    ALL = "ALL"
    NONE = "NONE"
    UNKNOWN = "UNKNOWN"


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
    scheduled_at: datetime | None = None
    """The tick it stands for when the daemon evaluated it on its schedule; None on demand."""


@dataclass(frozen=True, slots=True)
class Trigger:
    """A trigger defined on the server."""

    name: str
    description: str | None
    enabled: bool
    interval_seconds: float | None
    timeout_seconds: float
    last_evaluation: TriggerEvaluation | None
    cron: str | None = None
    """Its cron expression, read on the wall clock of ``timezone``; None without one."""
    timezone: str | None = None
    catch_up: TriggerCatchUp | None = None
    next_evaluation_at: datetime | None = None
    next_fire_times: tuple[datetime, ...] = ()
    """The next five times its cron expression fires (empty without cron)."""


__all__ = [
    "Asset",
    "AssetPartition",
    "AssetPreview",
    "Backfill",
    "BackfillAsset",
    "BackfillCounts",
    "BackfillStatus",
    "Job",
    "PartitionStatus",
    "PartitionStatusRange",
    "PartitionsInfo",
    "Preview",
    "Run",
    "RunStatus",
    "RunWorker",
    "SkippedPartition",
    "TolerantEnum",
    "Trigger",
    "TriggerCatchUp",
    "TriggerEvaluation",
    "TriggerOutcome",
    "TriggerRequestResult",
]
