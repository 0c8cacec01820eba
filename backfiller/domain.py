"""Framework-free vocabulary of the service: stored states and the rules that move them.

Nothing here does IO or imports strawberry or SQLAlchemy. The public GraphQL enums live in
``backfiller.schema`` and are mapped from these in ``backfiller.resolvers``; the two sets are
declared apart so storage can grow a state without it leaking into the public contract.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass


class BackfillState(enum.StrEnum):
    REQUESTED = "requested"
    RUNNING = "running"
    PAUSED = "paused"
    CANCELING = "canceling"
    CANCELED = "canceled"
    COMPLETED_SUCCESS = "completed_success"
    COMPLETED_FAILED = "completed_failed"
    FAILED = "failed"

    @property
    def is_terminal(self) -> bool:
        return self in TERMINAL_BACKFILL_STATES


TERMINAL_BACKFILL_STATES = frozenset(
    {
        BackfillState.CANCELED,
        BackfillState.COMPLETED_SUCCESS,
        BackfillState.COMPLETED_FAILED,
        BackfillState.FAILED,
    }
)

# Allowed backfill transitions, declared as data: from-state -> to-states.
BACKFILL_TRANSITIONS: Mapping[BackfillState, frozenset[BackfillState]] = {
    BackfillState.REQUESTED: frozenset(
        {
            BackfillState.RUNNING,
            BackfillState.PAUSED,
            BackfillState.CANCELING,
            BackfillState.CANCELED,
            BackfillState.COMPLETED_SUCCESS,
            BackfillState.COMPLETED_FAILED,
            BackfillState.FAILED,
        }
    ),
    BackfillState.RUNNING: frozenset(
        {
            BackfillState.PAUSED,
            BackfillState.CANCELING,
            BackfillState.COMPLETED_SUCCESS,
            BackfillState.COMPLETED_FAILED,
            BackfillState.FAILED,
        }
    ),
    BackfillState.PAUSED: frozenset(
        {
            BackfillState.RUNNING,
            BackfillState.REQUESTED,
            BackfillState.CANCELING,
            BackfillState.CANCELED,
            BackfillState.FAILED,
        }
    ),
    BackfillState.CANCELING: frozenset({BackfillState.CANCELED, BackfillState.FAILED}),
    BackfillState.CANCELED: frozenset(),
    BackfillState.COMPLETED_SUCCESS: frozenset(),
    BackfillState.COMPLETED_FAILED: frozenset(),
    BackfillState.FAILED: frozenset(),
}


def can_transition(current: BackfillState, target: BackfillState) -> bool:
    """Whether a backfill may move from ``current`` to ``target``."""
    return target in BACKFILL_TRANSITIONS[current]


def sources_of(target: BackfillState) -> frozenset[BackfillState]:
    """Every state from which ``target`` may be reached (for conditional updates)."""
    return frozenset(s for s, tos in BACKFILL_TRANSITIONS.items() if target in tos)


class SlotState(enum.StrEnum):
    """The state of one partition inside one backfill."""

    PENDING = "pending"
    QUEUED = "queued"
    RUNNING = "running"
    SUCCEEDED = "succeeded"
    FAILED = "failed"
    CANCELED = "canceled"
    SKIPPED = "skipped"

    @property
    def is_terminal(self) -> bool:
        return self in TERMINAL_SLOT_STATES


TERMINAL_SLOT_STATES = frozenset(
    {SlotState.SUCCEEDED, SlotState.FAILED, SlotState.CANCELED, SlotState.SKIPPED}
)

SLOT_TRANSITIONS: Mapping[SlotState, frozenset[SlotState]] = {
    SlotState.PENDING: frozenset({SlotState.QUEUED, SlotState.SKIPPED, SlotState.CANCELED}),
    SlotState.QUEUED: frozenset(
        {
            SlotState.RUNNING,
            SlotState.PENDING,
            SlotState.FAILED,
            SlotState.CANCELED,
            SlotState.SUCCEEDED,
        }
    ),
    SlotState.RUNNING: frozenset(
        {SlotState.SUCCEEDED, SlotState.FAILED, SlotState.PENDING, SlotState.CANCELED}
    ),
    SlotState.SUCCEEDED: frozenset(),
    SlotState.FAILED: frozenset(),
    SlotState.CANCELED: frozenset(),
    SlotState.SKIPPED: frozenset(),
}


class RunState(enum.StrEnum):
    QUEUED = "queued"
    RUNNING = "running"
    SUCCESS = "success"
    FAILED = "failed"
    CANCELED = "canceled"

    @property
    def is_active(self) -> bool:
        return self in ACTIVE_RUN_STATES


ACTIVE_RUN_STATES = frozenset({RunState.QUEUED, RunState.RUNNING})

RUN_TRANSITIONS: Mapping[RunState, frozenset[RunState]] = {
    RunState.QUEUED: frozenset(
        {RunState.RUNNING, RunState.FAILED, RunState.CANCELED, RunState.SUCCESS}
    ),
    RunState.RUNNING: frozenset({RunState.SUCCESS, RunState.FAILED, RunState.CANCELED}),
    RunState.SUCCESS: frozenset(),
    RunState.FAILED: frozenset(),
    RunState.CANCELED: frozenset(),
}


class FailureReason(enum.StrEnum):
    ERROR = "error"
    TIMEOUT = "timeout"
    WORKER_LOST = "worker_lost"


class SelectionKind(enum.StrEnum):
    RANGE = "range"
    KEYS = "keys"
    ALL = "all"


class Reprocess(enum.StrEnum):
    MISSING = "missing"
    FAILED_AND_MISSING = "failed_and_missing"
    ALL = "all"


class Order(enum.StrEnum):
    OLDEST_FIRST = "oldest_first"
    NEWEST_FIRST = "newest_first"


class SkipReason(enum.StrEnum):
    """Why a partition of a backfill will not run."""

    ALREADY_SUCCEEDED = "already_succeeded"
    ALREADY_FAILED = "already_failed"  # reserved: FAILED_AND_MISSING reruns failures


def skip_reason_for(reprocess: Reprocess, latest: RunState | None) -> SkipReason | None:
    """Decide, from the latest run of a (job, partition) in any backfill, whether to skip it.

    ``MISSING`` reruns only what never succeeded and never failed; ``FAILED_AND_MISSING`` also
    reruns failures; ``ALL`` reruns everything.
    """
    if reprocess is Reprocess.ALL or latest is None:
        return None
    if latest is RunState.SUCCESS:
        return SkipReason.ALREADY_SUCCEEDED
    if latest is RunState.FAILED and reprocess is Reprocess.MISSING:
        return SkipReason.ALREADY_FAILED
    return None


class EventKind(enum.StrEnum):
    LAUNCHED = "launched"
    STARTED = "started"
    PAUSED = "paused"
    RESUMED = "resumed"
    CANCEL_REQUESTED = "cancel_requested"
    CANCELED = "canceled"
    RUN_FAILED = "run_failed"
    RETRIED = "retried"
    COMPLETED = "completed"
    FAILED = "failed"


@dataclass(frozen=True, slots=True)
class Counts:
    total: int = 0
    pending: int = 0
    queued: int = 0
    running: int = 0
    succeeded: int = 0
    failed: int = 0
    canceled: int = 0
    skipped: int = 0

    def adds_up(self) -> bool:
        return self.total == (
            self.pending
            + self.queued
            + self.running
            + self.succeeded
            + self.failed
            + self.canceled
            + self.skipped
        )
