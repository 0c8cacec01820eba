"""Late results: a run's real end, arriving after the run was reported lost.

A worker cut off from the broker goes on running its run and keeps its end until it can send
it; meanwhile its daemon, hearing no heartbeat, reports the run ``WORKER_LOST`` and the slot
goes back to pending for a retry. When that end arrives before a newer attempt of the partition
has started, it is the partition's outcome: it replaces the ``WORKER_LOST`` (whose charge to
the lost-worker budget is given back), and the retry is withdrawn: the slot's newer run, if one
was claimed and is still ``QUEUED``, ends ``CANCELED`` as never started (it costs nothing). Once
a newer attempt has started (its run is ``RUNNING`` in the database, or starts in the same
write), the late end is refused, as a stale attempt's.

Only a job body's own end is taken late (``SUCCESS``, ``ERROR``, ``TIMEOUT``), only over a
``WORKER_LOST`` recorded for the same run and attempt while it was leased to the writer, and
only for a run of one partition (a ranged run's late end is refused).
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any, NamedTuple

from sqlalchemy import bindparam, select, update

from backfiller.domain import (
    EventKind,
    FailureReason,
    Outcome,
    RunFinished,
    RunState,
    SlotState,
)
from backfiller.domain.retries import Budget, Decision, SoFar, decide_end, recorded_as
from backfiller.storage.events import event_row
from backfiller.storage.execution.common import runs_t, slots_t, states_t, unindexed
from backfiller.storage.prepared import Prepared
from backfiller.storage.value_lists import DIALECTS, one_of_list

if TYPE_CHECKING:
    from backfiller.storage.execution.results import Outcomes, _Changes

LATE_OUTCOMES = frozenset({Outcome.SUCCESS, Outcome.ERROR, Outcome.TIMEOUT})
"""The ends that may replace a ``WORKER_LOST``: a job body's own."""


class LostRun(NamedTuple):
    """A run recorded ``WORKER_LOST``, with its slot, as a late end finds it."""

    id: int
    slot_id: int
    backfill_id: int
    job_name: str
    partition_key: str
    attempt: int
    slot_status: SlotState
    attempts: int
    free_attempts: int
    lost_attempts: int


@dataclass(frozen=True)
class Newer:
    """The slot's run claimed after the lost one."""

    id: int
    status: RunState


def late_candidates(ends: Sequence[RunFinished]) -> list[RunFinished]:
    """The ends that may be late results (see the module's docstring)."""
    return [e for e in ends if e.outcome in LATE_OUTCOMES and e.attempt is not None]


async def record_late(
    repo: Any,
    owner: str,
    now: datetime,
    ends: Sequence[RunFinished],
    starting: Collection[int],
    budgets: Mapping[str, Budget],
    changes: _Changes,
    outcomes: Outcomes,
) -> None:
    """Add to ``changes`` the late ``ends`` that win (``starting``: runs starting in the same
    write; ``repo``: the results repository, for its session)."""
    by_id = {e.run_id: e for e in late_candidates(ends)}
    if not by_id:
        return
    found = await repo.rows_of(_LOST[repo.dialect], {"b_ids": list(by_id), "b_owner": owner})
    lost = [LostRun._make(r) for r in found]
    lost = [r for r in lost if by_id[int(r.id)].attempt == int(r.attempt)]
    if not lost:
        return
    statuses = await repo.statuses_of({int(r.backfill_id) for r in lost})
    for r in lost:
        replaceable, newer = await _newer(repo, r)
        if not replaceable or (newer is not None and newer.id in starting):
            continue  # a newer attempt has started: the late end is stale
        end = by_id[int(r.id)]
        _replace(changes, r, end, newer, now, budgets.get(r.job_name, Budget()), statuses)
        _count_late(outcomes, end, int(r.id))


async def _newer(repo: Any, r: LostRun) -> tuple[bool, Newer | None]:
    """Whether nothing has replaced the lost run, and the slot's newer run still QUEUED (None:
    none was claimed). Replaced: a newer run has started, or the slot moved on otherwise."""
    slot = SlotState(r.slot_status)
    if slot is SlotState.PENDING and int(r.attempts) == int(r.attempt):
        return True, None
    if slot is not SlotState.QUEUED or int(r.attempts) != int(r.attempt) + 1:
        return False, None
    found = await repo.rows_of(
        _NEWER[repo.dialect],
        {"b_slot": int(r.slot_id), "b_backfill": int(r.backfill_id), "b_attempt": int(r.attempts)},
    )
    if len(found) != 1 or RunState(found[0][1]) is not RunState.QUEUED:
        return False, None
    return True, Newer(int(found[0][0]), RunState.QUEUED)


def _replace(
    changes: _Changes,
    r: LostRun,
    end: RunFinished,
    newer: Newer | None,
    now: datetime,
    budget: Budget,
    statuses: Mapping[int, Any],
) -> None:
    slot_status = SlotState(r.slot_status)
    status, reason, ending = recorded_as(end.outcome)
    withdrawn = 1 if newer is not None else 0
    # The slot as it was when the lost run ended, before the WORKER_LOST charged it.
    so_far = SoFar(int(r.attempts) - withdrawn, int(r.free_attempts) - 1, int(r.lost_attempts) - 1)
    decision = decide_end(ending, so_far, budget, statuses.get(int(r.backfill_id)))
    changes.late_runs.append(
        {
            "b_id": int(r.id),
            "b_backfill": int(r.backfill_id),
            "b_status": status,
            "b_reason": reason,
            "b_message": end.error_message,
            "b_trace": end.error_traceback,
            "b_ended": end.at,
            "b_worker": end.worker,
        }
    )
    if newer is not None:
        changes.withdrawn.append(
            {
                "b_id": newer.id,
                "b_backfill": int(r.backfill_id),  # a retry of the same slot
                "b_ended": now,
                "b_message": f"withdrawn: the late result of attempt {r.attempt} was recorded",
            }
        )
    changes.late_slots.append(_slot_change(r, decision, withdrawn, now))
    changes.moves.move(int(r.backfill_id), slot_status, decision.slot)
    changes.late_states.append(
        {
            "b_job": r.job_name,
            "b_key": r.partition_key,
            "b_status": status,
            "b_run": int(r.id),
            "b_newer": newer.id if newer is not None else int(r.id),
            "b_now": now,
        }
    )
    if decision.failure:  # one event per failed attempt, as ``results._end`` writes
        message = (
            f"{r.partition_key} attempt {r.attempt} failed ({(reason or 'error').upper()}), its "
            f"result coming after it was taken for lost: {(end.error_message or '')[:300]}; "
            f"{decision.note}"
        )
        changes.events.append(
            event_row(int(r.backfill_id), EventKind.RUN_FAILED, end.at, None, message)
        )


def _slot_change(r: LostRun, decision: Decision, withdrawn: int, now: datetime) -> dict[str, Any]:
    """The slot's move: the late end's decision, less the lost attempt's charge, plus the
    withdrawn retry's (free)."""
    delay = decision.delay_seconds
    return {
        "b_id": int(r.slot_id),
        "b_backfill": int(r.backfill_id),
        "b_old": SlotState(r.slot_status),
        "b_new": decision.slot,
        "b_next": now + timedelta(seconds=delay)
        if decision.slot is SlotState.PENDING and delay > 0
        else None,
        "b_free": decision.free - 1 + withdrawn,
        "b_lost": decision.lost - 1,
        "b_now": now,
    }


def _count_late(outcomes: Outcomes, end: RunFinished, run_id: int) -> None:
    if end.outcome is Outcome.SUCCESS:
        outcomes.succeeded += 1
    else:
        outcomes.failed += 1
    outcomes.late += 1
    outcomes.written.append(run_id)


def _lost_rows(dialect: str) -> Prepared:
    stmt = (
        select(
            runs_t.c.id,
            runs_t.c.slot_id,
            runs_t.c.backfill_id,
            runs_t.c.job_name,
            runs_t.c.partition_key,
            runs_t.c.attempt,
            slots_t.c.status,
            slots_t.c.attempts,
            slots_t.c.free_attempts,
            slots_t.c.lost_attempts,
        )
        .join(
            slots_t,
            (slots_t.c.id == runs_t.c.slot_id) & (slots_t.c.backfill_id == runs_t.c.backfill_id),
        )
        .where(
            one_of_list(dialect, runs_t.c.id, "b_ids"),
            runs_t.c.lease_owner == bindparam("b_owner"),
            runs_t.c.status == RunState.FAILED,
            runs_t.c.failure_reason == FailureReason.WORKER_LOST,
            runs_t.c.lead_run_id.is_(None),
            runs_t.c.partition_count == 1,
        )
    )
    if dialect == "postgresql":
        stmt = stmt.with_for_update()
    return Prepared(stmt)


def _newer_rows(dialect: str) -> Prepared:
    stmt = select(runs_t.c.id, runs_t.c.status).where(
        runs_t.c.slot_id == bindparam("b_slot"),
        runs_t.c.backfill_id == bindparam("b_backfill"),
        runs_t.c.attempt == bindparam("b_attempt"),
    )
    if dialect == "postgresql":
        stmt = stmt.with_for_update()
    return Prepared(stmt)


_LOST = {dialect: _lost_rows(dialect) for dialect in DIALECTS}
_NEWER = {dialect: _newer_rows(dialect) for dialect in DIALECTS}

LATE_RUNS = Prepared(
    update(runs_t)
    .where(
        runs_t.c.id == bindparam("b_id"),
        runs_t.c.backfill_id == bindparam("b_backfill"),
        unindexed(runs_t.c.status) == RunState.FAILED,
        runs_t.c.failure_reason == FailureReason.WORKER_LOST,
    )
    .values(
        status=bindparam("b_status"),
        failure_reason=bindparam("b_reason"),
        error_message=bindparam("b_message"),
        error_traceback=bindparam("b_trace"),
        ended_at=bindparam("b_ended"),
        worker=bindparam("b_worker"),
    )
)
WITHDRAWN_RUNS = Prepared(
    update(runs_t)
    .where(
        runs_t.c.id == bindparam("b_id"),
        runs_t.c.backfill_id == bindparam("b_backfill"),
        unindexed(runs_t.c.status) == RunState.QUEUED,
    )
    .values(
        status=RunState.CANCELED,
        error_message=bindparam("b_message"),
        ended_at=bindparam("b_ended"),
    )
)
LATE_STATES = Prepared(
    update(states_t)
    .where(
        states_t.c.job_name == bindparam("b_job"),
        states_t.c.partition_key == bindparam("b_key"),
        states_t.c.run_id.in_([bindparam("b_run"), bindparam("b_newer")]),
    )
    .values(status=bindparam("b_status"), run_id=bindparam("b_run"), updated_at=bindparam("b_now"))
)
