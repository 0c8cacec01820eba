"""Framework-free vocabulary of the service: stored states and the rules that move them.

Nothing here does IO or imports strawberry or SQLAlchemy. The public GraphQL enums live in
``backfiller.schema`` and are mapped from these in ``backfiller.resolvers``; the two sets are
declared apart so storage can grow a state without it leaking into the public contract.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime

from backfiller.pickled import by_position


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
UNFINISHED_BACKFILL_STATES = frozenset(set(BackfillState) - TERMINAL_BACKFILL_STATES)
"""A backfill in one of these may still change; one in a terminal state never does."""

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
    # RUNNING -> CANCELED directly when nothing of it is queued or running (cancel_idle):
    # there is nothing to wait for, so CANCELING would only be an empty step.
    BackfillState.RUNNING: frozenset(
        {
            BackfillState.PAUSED,
            BackfillState.CANCELING,
            BackfillState.CANCELED,
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


def expected_for(
    target: BackfillState, among: frozenset[BackfillState] | None = None
) -> list[BackfillState]:
    """The statuses a conditional update to ``target`` may start from, from the table.

    ``among`` narrows them to the move's own case (a start is only from REQUESTED); every
    state of ``among`` must be a legal source, or the caller contradicts the table.
    """
    sources = sources_of(target)
    if among is not None:
        illegal = among - sources
        if illegal:
            raise ValueError(f"the table forbids {sorted(illegal)} -> {target}")
        sources = among
    return sorted(sources)


class SteerVerb(enum.StrEnum):
    """What a user asks of a backfill: the pause, resume and cancel mutations."""

    PAUSE = "pause"
    RESUME = "resume"
    CANCEL = "cancel"


@dataclass(frozen=True, slots=True)
class SteerRule:
    """A verb's rule: where it leads, and where it is already done (answered as is)."""

    target: BackfillState
    already: frozenset[BackfillState]


STEER_RULES: Mapping[SteerVerb, SteerRule] = {
    SteerVerb.PAUSE: SteerRule(BackfillState.PAUSED, frozenset({BackfillState.PAUSED})),
    # Resume leads back to RUNNING, or to REQUESTED when the backfill never started.
    SteerVerb.RESUME: SteerRule(
        BackfillState.RUNNING, frozenset({BackfillState.REQUESTED, BackfillState.RUNNING})
    ),
    # Cancel leads to CANCELING (CANCELED at once when nothing is queued or running).
    SteerVerb.CANCEL: SteerRule(
        BackfillState.CANCELING, frozenset({BackfillState.CANCELING, BackfillState.CANCELED})
    ),
}


START_PERMIT_SECONDS = 0.05
"""How long one read of the start gate lets a run start, and how long a pause or cancel waits,
once committed, before it answers.

A worker reads the gate once for all the tasks it holds (``launchers.worker``) and may start
each one it let through until this much time has passed since it sent the read, by its own
monotonic clock. A read that let a run through saw the backfill RUNNING, so it began before the
pause or cancel committed; that commit answers this much later (``resolvers.backfills``), so
every run let through by a read from before the commit has started, if it starts at all, before
the answer. Once a pause or cancel has answered, no run of the backfill starts."""


class SteerRefused(Exception):
    """The verb does not apply to a backfill in this state."""


def steer_target(verb: SteerVerb, state: BackfillState, started: bool) -> BackfillState | None:
    """Where ``verb`` moves a backfill in ``state`` (None: already done), from the table.

    Raises :class:`SteerRefused` when the transition table forbids the move.
    """
    rule = STEER_RULES[verb]
    if state in rule.already:
        return None
    target = rule.target
    if verb is SteerVerb.RESUME and not started:
        target = BackfillState.REQUESTED
    if not can_transition(state, target):
        raise SteerRefused(f"cannot {verb.value} a backfill that is {state.value}")
    return target


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


def slot_sources_of(target: SlotState) -> list[SlotState]:
    """Every slot state from which ``target`` may be reached, sorted (for conditional updates)."""
    return sorted(s for s, tos in SLOT_TRANSITIONS.items() if target in tos)


class RunState(enum.StrEnum):
    QUEUED = "queued"
    RUNNING = "running"
    SUCCESS = "success"
    FAILED = "failed"
    CANCELED = "canceled"
    SKIPPED = "skipped"
    """Never a run's: a partition's latest state (``partition_states``) when it was marked
    skipped by hand (``markPartitions``, see :class:`MarkStatus`)."""

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
    RunState.SKIPPED: frozenset(),
}


def run_sources_of(target: RunState) -> list[RunState]:
    """Every run state from which ``target`` may be reached, sorted (for conditional updates)."""
    return sorted(s for s, tos in RUN_TRANSITIONS.items() if target in tos)


DEFAULT_LOST_WORKER_RETRIES = 3
"""Attempts of a partition lost with their worker (or daemon) that are retried, by default."""


class FailureReason(enum.StrEnum):
    ERROR = "error"
    TIMEOUT = "timeout"
    WORKER_LOST = "worker_lost"


class Outcome(enum.StrEnum):
    """How a run ended, as its launcher saw it."""

    SUCCESS = "success"
    ERROR = "error"
    TIMEOUT = "timeout"
    WORKER_LOST = "worker_lost"
    CANCELED = "canceled"
    NOT_STARTED = "not_started"
    """The start gate refused the run (its backfill was paused or canceled): it never ran."""


@by_position
@dataclass(frozen=True, slots=True)
class RunFinished:
    """How one run ended: the single representation of a run's end, from worker to storage.

    ``(run_id, attempt)`` is the run's fencing token: storage writes the end only while the run
    is active, leased to the writer and at that attempt (``attempt=None`` skips that check).
    """

    run_id: int
    at: datetime
    outcome: Outcome
    error_message: str | None = None
    error_traceback: str | None = None
    worker: str | None = None
    attempt: int | None = None


class BackfillKind(enum.StrEnum):
    """What a backfill runs: one job's partitions, or the partitions of a set of assets (its
    ``asset_target``; it has no job of its own)."""

    JOB = "job"
    ASSETS = "assets"


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
    UPSTREAM_FAILED = "upstream_failed"  # an asset partition it depends on failed
    MARKED_SKIPPED = "marked_skipped"  # it was marked skipped by hand (``markPartitions``)


class MarkStatus(enum.StrEnum):
    """What ``markPartitions`` records of a partition, without running it."""

    SUCCEEDED = "succeeded"
    SKIPPED = "skipped"

    @property
    def state(self) -> RunState:
        """The partition's latest state once marked: a marked success is a success."""
        return RunState.SUCCESS if self is MarkStatus.SUCCEEDED else RunState.SKIPPED


def skip_reason_at_claim(
    reprocess: Reprocess, latest: RunState | None, attempts: int
) -> SkipReason | None:
    """Decide, when a slot is claimed, whether another run of its partition made it moot.

    The first claim applies :func:`skip_reason_for` to the partition's latest run (which may
    have ended, in another backfill, after the slot was planned); a retry of the slot (its own
    attempts failed) is skipped only when another run has since succeeded.
    """
    if attempts == 0:
        return skip_reason_for(reprocess, latest)
    if reprocess is not Reprocess.ALL and latest in (RunState.SUCCESS, RunState.SKIPPED):
        return skip_reason_for(reprocess, latest)
    return None


def skip_reason_for(reprocess: Reprocess, latest: RunState | None) -> SkipReason | None:
    """Decide, from the latest run of a (job, partition) in any backfill, whether to skip it.

    ``MISSING`` reruns only what never succeeded and never failed; ``FAILED_AND_MISSING`` also
    reruns failures; ``ALL`` reruns everything. A partition marked succeeded counts as
    succeeded; one marked skipped runs only under ``ALL``.
    """
    if reprocess is Reprocess.ALL or latest is None:
        return None
    if latest is RunState.SUCCESS:
        return SkipReason.ALREADY_SUCCEEDED
    if latest is RunState.SKIPPED:
        return SkipReason.MARKED_SKIPPED
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
    UPDATED = "updated"
    """``updateBackfill`` changed its limit, priority, title or description."""


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
