"""The transition tables drive the steering verbs and the conditional updates."""

from __future__ import annotations

import pytest

from backfiller.domain import (
    BACKFILL_TRANSITIONS,
    BackfillState,
    Reprocess,
    RunState,
    SkipReason,
    SteerRefused,
    SteerVerb,
    expected_for,
    skip_reason_at_claim,
    steer_target,
)

B = BackfillState
PAUSE, RESUME, CANCEL = SteerVerb.PAUSE, SteerVerb.RESUME, SteerVerb.CANCEL

# (verb, state, started) -> target, None when already done, "refused" when the table forbids it
STEER_CASES: list[tuple[SteerVerb, BackfillState, bool, BackfillState | str | None]] = [
    (PAUSE, B.REQUESTED, False, B.PAUSED),
    (PAUSE, B.RUNNING, True, B.PAUSED),
    (PAUSE, B.PAUSED, True, None),
    (PAUSE, B.CANCELING, True, "refused"),
    (PAUSE, B.COMPLETED_SUCCESS, True, "refused"),
    (RESUME, B.PAUSED, True, B.RUNNING),
    (RESUME, B.PAUSED, False, B.REQUESTED),
    (RESUME, B.RUNNING, True, None),
    (RESUME, B.REQUESTED, False, None),
    (RESUME, B.CANCELED, True, "refused"),
    (RESUME, B.FAILED, True, "refused"),
    (CANCEL, B.REQUESTED, False, B.CANCELING),
    (CANCEL, B.RUNNING, True, B.CANCELING),
    (CANCEL, B.PAUSED, True, B.CANCELING),
    (CANCEL, B.CANCELING, True, None),
    (CANCEL, B.CANCELED, True, None),
    (CANCEL, B.COMPLETED_FAILED, True, "refused"),
    (CANCEL, B.FAILED, True, "refused"),
]


@pytest.mark.parametrize(("verb", "state", "started", "expected"), STEER_CASES)
def test_steer_target(
    verb: SteerVerb, state: BackfillState, started: bool, expected: BackfillState | str | None
) -> None:
    if expected == "refused":
        with pytest.raises(SteerRefused):
            steer_target(verb, state, started)
    else:
        assert steer_target(verb, state, started) == expected


def test_cancel_of_an_idle_backfill_is_allowed_by_the_table() -> None:
    # cancel_idle moves straight to CANCELED from every state a cancel applies to.
    assert set(expected_for(B.CANCELED)) == {B.REQUESTED, B.RUNNING, B.PAUSED, B.CANCELING}


def test_terminal_states_go_nowhere() -> None:
    for state, targets in BACKFILL_TRANSITIONS.items():
        assert (not targets) == state.is_terminal


def test_expected_for_refuses_a_source_the_table_forbids() -> None:
    assert expected_for(B.RUNNING, frozenset({B.REQUESTED})) == [B.REQUESTED]
    with pytest.raises(ValueError, match="forbids"):
        expected_for(B.RUNNING, frozenset({B.CANCELED}))


S = SkipReason
CLAIM_CASES: list[tuple[Reprocess, RunState | None, int, SkipReason | None]] = [
    (Reprocess.MISSING, None, 0, None),
    (Reprocess.MISSING, RunState.SUCCESS, 0, S.ALREADY_SUCCEEDED),
    (Reprocess.MISSING, RunState.FAILED, 0, S.ALREADY_FAILED),
    (Reprocess.FAILED_AND_MISSING, RunState.FAILED, 0, None),
    (Reprocess.FAILED_AND_MISSING, RunState.SUCCESS, 0, S.ALREADY_SUCCEEDED),
    (Reprocess.ALL, RunState.SUCCESS, 0, None),
    # a retry of the slot's own failure is not skipped for it ...
    (Reprocess.MISSING, RunState.FAILED, 1, None),
    # ... but another run's success since then makes it moot
    (Reprocess.MISSING, RunState.SUCCESS, 2, S.ALREADY_SUCCEEDED),
    (Reprocess.ALL, RunState.SUCCESS, 2, None),
]


@pytest.mark.parametrize(("reprocess", "latest", "attempts", "expected"), CLAIM_CASES)
def test_skip_reason_at_claim(
    reprocess: Reprocess, latest: RunState | None, attempts: int, expected: SkipReason | None
) -> None:
    assert skip_reason_at_claim(reprocess, latest, attempts) == expected
