"""The retry decision, case by case, without a database."""

from __future__ import annotations

import pytest

from backfiller.domain import BackfillState, Outcome, SlotState
from backfiller.domain.retries import (
    Budget,
    Decision,
    Ending,
    SoFar,
    decide_end,
    legal,
    recorded_as,
)

RUNNING = BackfillState.RUNNING
CANCELING = BackfillState.CANCELING
PAUSED = BackfillState.PAUSED

CASES: list[tuple[str, Ending, SoFar, Budget, BackfillState, Decision]] = [
    ("success", Ending.SUCCEEDED, SoFar(1), Budget(), RUNNING, Decision(SlotState.SUCCEEDED)),
    ("canceled", Ending.CANCELED, SoFar(1), Budget(), CANCELING, Decision(SlotState.CANCELED)),
    (
        "first failure, one retry allowed",
        Ending.FAILED,
        SoFar(1),
        Budget(max_retries=1, delay_seconds=5),
        RUNNING,
        Decision(SlotState.PENDING, delay_seconds=5, failure=True, note="will retry"),
    ),
    (
        "second failure, one retry allowed",
        Ending.FAILED,
        SoFar(2),
        Budget(max_retries=1),
        RUNNING,
        Decision(SlotState.FAILED, failure=True, note="no retry left"),
    ),
    (
        "failures after lost attempts: the lost ones are free",
        Ending.FAILED,
        SoFar(3, free=2, lost=2),
        Budget(max_retries=0),
        RUNNING,
        Decision(SlotState.FAILED, failure=True, note="no retry left"),
    ),
    (
        "a failure while paused still retries (the slot waits for resume)",
        Ending.FAILED,
        SoFar(1),
        Budget(max_retries=1),
        PAUSED,
        Decision(SlotState.PENDING, failure=True, note="will retry"),
    ),
    (
        "a failure while canceling is final",
        Ending.FAILED,
        SoFar(1),
        Budget(max_retries=3),
        CANCELING,
        Decision(SlotState.FAILED, failure=True, note="no retry: the backfill is stopping"),
    ),
    (
        "a lost worker without any error retries",
        Ending.WORKER_LOST,
        SoFar(1),
        Budget(max_retries=0),
        RUNNING,
        Decision(
            SlotState.PENDING,
            free=1,
            lost=1,
            failure=True,
            note="retrying (a lost worker does not count against the retry policy)",
        ),
    ),
    (
        "the fourth lost worker exceeds the default budget of 3",
        Ending.WORKER_LOST,
        SoFar(4, free=3, lost=3),
        Budget(),
        RUNNING,
        Decision(SlotState.FAILED, free=1, lost=1, failure=True, note="no lost-worker retry left"),
    ),
    (
        "lost worker budget 0",
        Ending.WORKER_LOST,
        SoFar(1),
        Budget(lost_worker_retries=0),
        RUNNING,
        Decision(SlotState.FAILED, free=1, lost=1, failure=True, note="no lost-worker retry left"),
    ),
    (
        "a lost worker while canceling",
        Ending.WORKER_LOST,
        SoFar(1),
        Budget(),
        CANCELING,
        Decision(SlotState.CANCELED, free=1, lost=1, failure=True, note="canceled"),
    ),
    (
        "not started: the backfill was paused; the slot waits, no budget used",
        Ending.NOT_STARTED,
        SoFar(1),
        Budget(),
        PAUSED,
        Decision(SlotState.PENDING, free=1),
    ),
    (
        "not started: the backfill is canceling",
        Ending.NOT_STARTED,
        SoFar(1),
        Budget(),
        CANCELING,
        Decision(SlotState.CANCELED, free=1),
    ),
]


@pytest.mark.parametrize(
    ("ending", "so_far", "budget", "backfill", "expected"),
    [case[1:] for case in CASES],
    ids=[case[0] for case in CASES],
)
def test_decide_end(
    ending: Ending, so_far: SoFar, budget: Budget, backfill: BackfillState, expected: Decision
) -> None:
    decision = decide_end(ending, so_far, budget, backfill)
    assert decision == expected
    for old in (SlotState.QUEUED, SlotState.RUNNING):
        assert legal(old, decision), "the decision is a move the slot table allows"


@pytest.mark.parametrize("outcome", list(Outcome))
def test_every_outcome_is_recorded_somehow(outcome: Outcome) -> None:
    status, reason, ending = recorded_as(outcome)
    assert not status.is_active
    assert (reason is not None) == (status.value == "failed")
    assert isinstance(ending, Ending)
