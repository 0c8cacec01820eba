"""What becomes of a partition when one of its runs ends: a pure decision, no IO.

Storage reads the facts (how the run ended, the slot's attempts so far, the job's budgets, the
backfill's state), asks :func:`decide_end`, and writes the answer with conditional updates.

Three budgets, kept apart:

- the job's **error retries** (``RetryPolicy.max_retries``): attempts that failed or timed out;
- the job's **lost-worker retries** (``lost_worker_retries``, default 3): attempts whose worker
  or daemon died under them (``WORKER_LOST``), an infrastructure fault, not the job's;
- runs **taken back before they started** (the start gate refused them because the backfill was
  paused, or the lease ran out first) use no budget at all: they never executed.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

from backfiller.domain import (
    DEFAULT_LOST_WORKER_RETRIES,
    SLOT_TRANSITIONS,
    BackfillState,
    FailureReason,
    Outcome,
    RunState,
    SlotState,
)

STOPPING_BACKFILL_STATES = frozenset(
    {BackfillState.CANCELING, BackfillState.CANCELED, BackfillState.FAILED}
)


class Ending(enum.StrEnum):
    """How a run ended, as far as its partition is concerned."""

    SUCCEEDED = "succeeded"
    CANCELED = "canceled"
    FAILED = "failed"  # the job raised, or timed out
    WORKER_LOST = "worker_lost"
    NOT_STARTED = "not_started"


@dataclass(frozen=True, slots=True)
class Budget:
    """A job's retry budgets."""

    max_retries: int = 0
    delay_seconds: float = 0.0
    lost_worker_retries: int = DEFAULT_LOST_WORKER_RETRIES


@dataclass(frozen=True, slots=True)
class SoFar:
    """A slot's attempts, the ending one included (``attempts`` counts every run claimed).

    ``free``: attempts that did not count against the error retries (lost or not started);
    ``lost``: attempts lost with their worker.
    """

    attempts: int
    free: int = 0
    lost: int = 0


@dataclass(frozen=True, slots=True)
class Decision:
    slot: SlotState
    free: int = 0
    """Add to the slot's free attempts."""
    lost: int = 0
    """Add to the slot's lost attempts."""
    delay_seconds: float = 0.0
    """Wait this long before the retry (when ``slot`` is PENDING)."""
    failure: bool = False
    """Whether this is a failed attempt worth an event."""
    note: str = ""
    """What happens next, for the event's message."""

    @property
    def retried(self) -> bool:
        return self.slot is SlotState.PENDING and self.failure


_OUTCOMES: dict[Outcome, tuple[RunState, FailureReason | None, Ending]] = {
    Outcome.SUCCESS: (RunState.SUCCESS, None, Ending.SUCCEEDED),
    Outcome.ERROR: (RunState.FAILED, FailureReason.ERROR, Ending.FAILED),
    Outcome.TIMEOUT: (RunState.FAILED, FailureReason.TIMEOUT, Ending.FAILED),
    Outcome.WORKER_LOST: (RunState.FAILED, FailureReason.WORKER_LOST, Ending.WORKER_LOST),
    Outcome.CANCELED: (RunState.CANCELED, None, Ending.CANCELED),
    Outcome.NOT_STARTED: (RunState.CANCELED, None, Ending.NOT_STARTED),
}


def recorded_as(outcome: Outcome) -> tuple[RunState, FailureReason | None, Ending]:
    """The run's stored status and failure reason, and the ending its slot sees."""
    return _OUTCOMES[outcome]


def decide_end(
    ending: Ending, so_far: SoFar, budget: Budget, backfill: BackfillState | None
) -> Decision:
    """The slot's next state after a run of it ended ``ending`` (from a QUEUED or RUNNING slot)."""
    stopping = backfill in STOPPING_BACKFILL_STATES
    if ending is Ending.SUCCEEDED:
        return Decision(SlotState.SUCCEEDED)
    if ending is Ending.CANCELED:
        return Decision(SlotState.CANCELED)
    if ending is Ending.NOT_STARTED:
        if stopping:
            return Decision(SlotState.CANCELED, free=1)
        return Decision(SlotState.PENDING, free=1)
    if ending is Ending.WORKER_LOST:
        if stopping:
            return Decision(SlotState.CANCELED, free=1, lost=1, failure=True, note="canceled")
        if so_far.lost + 1 <= budget.lost_worker_retries:
            note = "retrying (a lost worker does not count against the retry policy)"
            return Decision(SlotState.PENDING, free=1, lost=1, failure=True, note=note)
        return Decision(
            SlotState.FAILED, free=1, lost=1, failure=True, note="no lost-worker retry left"
        )
    if stopping:
        return Decision(SlotState.FAILED, failure=True, note="no retry: the backfill is stopping")
    used = so_far.attempts - so_far.free
    if used <= budget.max_retries:
        return Decision(
            SlotState.PENDING, delay_seconds=budget.delay_seconds, failure=True, note="will retry"
        )
    return Decision(SlotState.FAILED, failure=True, note="no retry left")


def legal(old: SlotState, decision: Decision) -> bool:
    """Whether the table allows the decision's move from ``old``."""
    return decision.slot in SLOT_TRANSITIONS[old]
