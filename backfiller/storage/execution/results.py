"""Results: what happened to runs (starts, ends, logs), written with fencing, and retries.

A run's end is written only while the run is active, leased to the writer and (when the end
carries one) at the same attempt: ``(run_id, attempt)`` is the fencing token, and a result from
a stale attempt is refused (counted in ``Outcomes.ignored``). What becomes of the slot is the
pure decision of :func:`backfiller.domain.retries.decide_end`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from functools import partial
from typing import Any, NamedTuple

from sqlalchemy import Boolean, Table, bindparam, case, func, null, select, update
from sqlalchemy.orm import Session

from backfiller.domain import EventKind, Outcome, RunFinished, RunState, SlotState, run_sources_of
from backfiller.domain.retries import Budget, Decision, SoFar, decide_end, legal, recorded_as
from backfiller.storage.events import (
    EVENTS,
    event_row,
)
from backfiller.storage.execution.common import (
    ACTIVE,
    CHUNK,
    Moves,
    SessionRepository,
    one_of,
    runs_t,
    slots_t,
    unindexed,
)
from backfiller.storage.execution.late import (
    LATE_RUNS,
    LATE_STATES,
    WITHDRAWN_RUNS,
    late_candidates,
    record_late,
)
from backfiller.storage.execution.logs import insert_log_rows, write_log_files
from backfiller.storage.execution.takebacks import leaves_no_record, take_back, write_take_backs
from backfiller.storage.partition_routes import ByPartition
from backfiller.storage.value_lists import DIALECTS, one_of_list

RetryRule = Budget
"""The job's retry budgets, as storage receives them (see ``backfiller.domain.retries``)."""


@dataclass(frozen=True, slots=True)
class RunStart:
    run_id: int
    at: datetime
    worker: str | None


@dataclass(frozen=True, slots=True)
class LogEntry:
    run_id: int
    at: datetime
    level: str
    message: str


@dataclass
class Outcomes:
    """What a write of run results did, for the tick's report: partitions (every row of a
    ranged run) for the counters but ``taken_back``, runs for ``written``."""

    started: int = 0
    succeeded: int = 0
    failed: int = 0
    retried: int = 0
    canceled: int = 0
    taken_back: int = 0
    """Runs (a ranged run once) given back to their backfill before they started."""
    ignored: int = 0
    late: int = 0
    """Runs reported lost whose late end was recorded (see ``late``)."""
    written: list[int] = field(default_factory=list)
    """The ids of the runs whose end was written (a ranged run's lead only)."""


@dataclass
class _Changes:
    """The rows a results write will update, gathered before any statement runs."""

    moves: Moves = field(default_factory=Moves)
    runs: list[dict[str, Any]] = field(default_factory=list)
    starts: list[dict[str, Any]] = field(default_factory=list)
    slots: list[dict[str, Any]] = field(default_factory=list)
    states: list[tuple[str, str, RunState, int]] = field(default_factory=list)
    events: list[dict[str, Any]] = field(default_factory=list)
    taken_back: list[dict[str, Any]] = field(default_factory=list)
    """Runs that never executed, to delete (see ``takebacks``)."""
    late_runs: list[dict[str, Any]] = field(default_factory=list)
    withdrawn: list[dict[str, Any]] = field(default_factory=list)
    late_slots: list[dict[str, Any]] = field(default_factory=list)
    late_states: list[dict[str, Any]] = field(default_factory=list)


class ActiveRun(NamedTuple):
    """An active run row with its slot's counts, as a results write reads it."""

    id: int
    lead_run_id: int | None
    partition_count: int
    status: RunState
    slot_id: int
    backfill_id: int
    job_name: str
    partition_key: str
    attempt: int
    slot_status: SlotState
    attempts: int
    free_attempts: int
    lost_attempts: int


_ENDS_FROM = run_sources_of(RunState.SUCCESS)  # QUEUED or RUNNING: an active run ends


class ResultsRepository(SessionRepository):
    async def record_results(
        self,
        owner: str,
        now: datetime,
        *,
        starts: Sequence[RunStart] = (),
        ends: Sequence[RunFinished] = (),
        logs: Sequence[LogEntry] = (),
        retry_rules: Mapping[str, Budget] | None = None,
        skip_locked: bool = False,
    ) -> Outcomes:
        """Write what happened to runs leased to ``owner``: starts, ends (with retries), logs."""
        outcomes = Outcomes()
        end_by_id = {e.run_id: e for e in ends}
        started_at = {s.run_id: s.at for s in starts}
        start_by_id = {s.run_id: s for s in starts if s.run_id not in end_by_id}
        await write_log_files(self, logs)  # with a log store of files, before any lock
        asked = list(end_by_id) + list(start_by_id)
        backfills = set((await self.backfills_of(asked)).values())
        rows = await self._active_rows(owner, asked, backfills, skip_locked)
        # A ranged run's other rows follow their lead (see RunRecord.lead_run_id), never alone.
        rows = [r for r in rows if r.lead_run_id is None]
        rows = [r for r in rows if _same_attempt(end_by_id.get(int(r.id)), int(r.attempt))]
        outcomes.ignored = len(end_by_id) + len(start_by_id) - len(rows)
        active = {int(r.id) for r in rows}
        ranged = [int(r.id) for r in rows if int(r.partition_count) > 1]
        if ranged:
            # Never skipped when locked: a range is written whole (its lead is locked already).
            of_ranged = {int(r.backfill_id) for r in rows if int(r.partition_count) > 1}
            rows += await self._active_rows(owner, ranged, of_ranged, False, members=True)
        await insert_log_rows(self, logs)
        changes = _Changes()
        inactive = [e for e in ends if e.run_id not in active]
        if late_candidates(inactive):
            await record_late(
                self, owner, now, inactive, start_by_id, retry_rules or {}, changes, outcomes
            )
            outcomes.ignored -= outcomes.late
        if not rows:
            if outcomes.late:
                await self._write(changes, now)
            return outcomes
        statuses = await self.statuses_of({int(r.backfill_id) for r in rows})
        for r in rows:
            run_id = int(r.lead_run_id or r.id)  # a member's events are its lead's
            end = end_by_id.get(run_id)
            if end is None:
                _start(changes, r, start_by_id[run_id], owner, now, outcomes)
                continue
            budget = (retry_rules or {}).get(r.job_name, Budget())
            backfill = statuses.get(int(r.backfill_id))
            if leaves_no_record(self.dialect, end, r, budget, backfill):
                take_back(changes.taken_back, changes.moves, r, owner)
                if r.lead_run_id is None:
                    outcomes.taken_back += 1
                    outcomes.written.append(run_id)
                continue
            _end(changes, r, end, (owner, started_at.get(run_id)), now, budget, backfill, outcomes)
        await self._write(changes, now)
        return outcomes

    async def _active_rows(
        self,
        owner: str,
        ids: list[int],
        backfills: set[int],
        skip_locked: bool,
        *,
        members: bool = False,
    ) -> list[ActiveRun]:
        """The active runs ``ids`` leased to ``owner`` (``members``: the other rows of the
        ranged runs ``ids``), with their slots; ``backfills``: theirs (the partitions to read,
        on PostgreSQL)."""
        if not backfills:
            return []  # none of them is active
        statement = _ACTIVE_ROWS[(self.dialect, members, skip_locked)]
        named = sorted(backfills)

        def read(session: Session) -> list[ActiveRun]:
            conn = session.connection()
            prepared = statement.of(conn, named)
            rows: list[ActiveRun] = []
            for i in range(0, len(ids), CHUNK):
                params = {"b_ids": ids[i : i + CHUNK], "b_backfills": named, "b_owner": owner}
                rows += map(ActiveRun._make, prepared.rows(conn, params))
            return rows

        return await self.session.run_sync(read)

    async def _write(self, changes: _Changes, now: datetime) -> None:
        await self.update_rows(_START_RUNS, changes.starts)
        await self.update_rows(_END_RUNS, changes.runs)
        await self.run_many(LATE_RUNS, changes.late_runs)
        await self.run_many(WITHDRAWN_RUNS, changes.withdrawn)
        await self.update_rows(_MOVE_SLOTS, changes.slots)
        await self.update_rows(_MOVE_SLOTS, changes.late_slots)
        await self.run_many(LATE_STATES, changes.late_states)
        await self.run_many(EVENTS, changes.events)
        await self.record_partition_states(changes.states, now)
        await write_take_backs(self, changes.taken_back, now)
        await self.apply_moves(changes.moves, now)


# A tick writes them for every run that started or ended, each in its backfill's partition on
# PostgreSQL (``SessionRepository.update_rows``, ``storage.partition_routes``).
def _start_runs(t: Table) -> Any:
    return (
        update(t)
        .where(
            t.c.id == bindparam("b_id"),
            t.c.backfill_id == bindparam("b_backfill"),  # its partition, on PostgreSQL
            one_of(unindexed(t.c.status), run_sources_of(RunState.RUNNING)),
            t.c.lease_owner == bindparam("b_owner"),
        )
        .values(
            status=RunState.RUNNING,
            started_at=bindparam("b_at"),
            heartbeat_at=bindparam("b_at"),
            worker=bindparam("b_worker"),
        )
    )


_START_RUNS = ByPartition(runs_t, _start_runs)


def _end_runs(t: Table) -> Any:
    return (
        update(t)
        .where(
            t.c.id == bindparam("b_id"),
            t.c.backfill_id == bindparam("b_backfill"),
            one_of(unindexed(t.c.status), _ENDS_FROM),
            t.c.lease_owner == bindparam("b_owner"),
        )
        .values(
            status=bindparam("b_status"),
            failure_reason=bindparam("b_reason"),
            error_message=bindparam("b_message"),
            error_traceback=bindparam("b_trace"),
            # A run that never executed (NOT_STARTED: granted after its worker gave up) shows no
            # start, even if its grant was written.
            started_at=case(
                (bindparam("b_unstarted", type_=Boolean), null()),
                else_=func.coalesce(t.c.started_at, bindparam("b_started")),
            ),
            ended_at=bindparam("b_ended"),
            worker=func.coalesce(bindparam("b_worker"), t.c.worker),
        )
    )


_END_RUNS = ByPartition(runs_t, _end_runs)


def _move_slots(t: Table) -> Any:
    return (
        update(t)
        .where(
            t.c.id == bindparam("b_id"),
            t.c.backfill_id == bindparam("b_backfill"),
            unindexed(t.c.status) == bindparam("b_old"),
        )
        .values(
            status=bindparam("b_new"),
            next_attempt_at=bindparam("b_next"),
            free_attempts=t.c.free_attempts + bindparam("b_free"),
            lost_attempts=t.c.lost_attempts + bindparam("b_lost"),
            updated_at=bindparam("b_now"),
        )
    )


_MOVE_SLOTS = ByPartition(slots_t, _move_slots)


def _active_rows(
    runs: Table, slots: Table, *, dialect: str, members: bool, skip_locked: bool
) -> Any:
    key = runs.c.lead_run_id if members else runs.c.id
    stmt = (
        select(
            runs.c.id,
            runs.c.lead_run_id,
            runs.c.partition_count,
            runs.c.status,
            runs.c.slot_id,
            runs.c.backfill_id,
            runs.c.job_name,
            runs.c.partition_key,
            runs.c.attempt,
            slots.c.status.label("slot_status"),
            slots.c.attempts,
            slots.c.free_attempts,
            slots.c.lost_attempts,
        )
        .join(slots, (slots.c.id == runs.c.slot_id) & (slots.c.backfill_id == runs.c.backfill_id))
        .where(
            one_of_list(dialect, key, "b_ids"),
            one_of_list(dialect, runs.c.backfill_id, "b_backfills"),
            runs.c.lease_owner == bindparam("b_owner"),
            one_of(runs.c.status, ACTIVE),
        )
    )
    if dialect == "postgresql":
        stmt = stmt.with_for_update(skip_locked=skip_locked)
    return stmt


_ACTIVE_ROWS = {
    (dialect, members, skip_locked): ByPartition(
        (runs_t, slots_t),
        partial(_active_rows, dialect=dialect, members=members, skip_locked=skip_locked),
    )
    for dialect in DIALECTS
    for members in (False, True)
    for skip_locked in (False, True)
}


def _same_attempt(end: RunFinished | None, attempt: int) -> bool:
    return end is None or end.attempt is None or end.attempt == attempt


def _start(
    changes: _Changes, r: Any, start: RunStart, owner: str, now: datetime, outcomes: Outcomes
) -> None:
    if RunState(r.status) is not RunState.QUEUED:
        return
    slot_status = SlotState(r.slot_status)
    changes.starts.append(
        {
            "b_id": int(r.id),
            "b_backfill": int(r.backfill_id),
            "b_at": start.at,
            "b_worker": start.worker,
            "b_owner": owner,
        }
    )
    changes.slots.append(_slot_change(r, slot_status, Decision(SlotState.RUNNING), now))
    changes.moves.move(int(r.backfill_id), slot_status, SlotState.RUNNING)
    changes.states.append((r.job_name, r.partition_key, RunState.RUNNING, int(r.id)))
    outcomes.started += 1


def _end(
    changes: _Changes,
    r: Any,
    end: RunFinished,
    owner_and_start: tuple[str, datetime | None],
    now: datetime,
    budget: Budget,
    backfill: Any,
    outcomes: Outcomes,
) -> None:
    owner, started_at = owner_and_start
    run_id, backfill_id = int(r.id), int(r.backfill_id)
    slot_status = SlotState(r.slot_status)
    status, reason, ending = recorded_as(end.outcome)
    so_far = SoFar(int(r.attempts), int(r.free_attempts), int(r.lost_attempts))
    decision = decide_end(ending, so_far, budget, backfill)
    assert legal(slot_status, decision), (slot_status, decision)
    _count(outcomes, status, decision, lead=r.lead_run_id is None)
    if decision.failure and r.lead_run_id is None:  # one event per run, ranged or not
        message = (
            f"{_partitions_of(r)} attempt {r.attempt} failed ({(reason or 'error').upper()}): "
            f"{(end.error_message or '')[:300]}; {decision.note}"
        )
        changes.events.append(event_row(backfill_id, EventKind.RUN_FAILED, end.at, None, message))
    changes.runs.append(
        {
            "b_id": run_id,
            "b_backfill": backfill_id,
            "b_owner": owner,
            "b_status": status,
            "b_reason": reason,
            "b_message": end.error_message,
            "b_trace": end.error_traceback,
            "b_started": started_at,
            "b_unstarted": end.outcome is Outcome.NOT_STARTED,
            "b_ended": end.at,
            "b_worker": end.worker,
        }
    )
    changes.slots.append(_slot_change(r, slot_status, decision, now))
    changes.moves.move(backfill_id, slot_status, decision.slot)
    changes.states.append((r.job_name, r.partition_key, status, run_id))
    if r.lead_run_id is None:
        outcomes.written.append(run_id)


def _partitions_of(r: Any) -> str:
    """A run's partitions in an event: its key, or a ranged run's first key and size."""
    more = int(r.partition_count) - 1
    if not more:
        return str(r.partition_key)
    return f"{r.partition_key} and the {more} partition{'s' if more > 1 else ''} after it"


def _count(outcomes: Outcomes, status: RunState, decision: Decision, *, lead: bool) -> None:
    if status is RunState.SUCCESS:
        outcomes.succeeded += 1
    elif status is RunState.FAILED:
        outcomes.failed += 1
    if decision.slot is SlotState.CANCELED:
        outcomes.canceled += 1
    if decision.retried:
        outcomes.retried += 1
    if not decision.failure and decision.slot is SlotState.PENDING and lead:
        outcomes.taken_back += 1


def _slot_change(r: Any, old: SlotState, decision: Decision, now: datetime) -> dict[str, Any]:
    """The change of run row ``r``'s slot."""
    delay = decision.delay_seconds
    return {
        "b_id": int(r.slot_id),
        "b_backfill": int(r.backfill_id),
        "b_old": old,
        "b_new": decision.slot,
        "b_next": now + timedelta(seconds=delay) if delay > 0 else None,
        "b_free": decision.free,
        "b_lost": decision.lost,
        "b_now": now,
    }
