"""The daemon's data functions: plan, claim, start, finish, requeue, complete. Never commits.

Every state change is conditional: a slot moves only from the status it was read in, a run only
while it is active and leased to the caller, a backfill row only from the statuses the move
allows. Counters on the backfills row change in the same transaction as the slots they count,
so ``pending + queued + running + succeeded + failed + canceled + skipped = total`` holds at
every commit.

Lock order, to stay free of deadlocks on PostgreSQL: a claim locks its backfill row first and
then takes slots with ``FOR UPDATE SKIP LOCKED`` (it never waits on a slot); every other
transaction locks runs and slots first and backfill rows last, in id order.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import bindparam, delete, func, insert, or_, select, text, update
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.ext.asyncio import AsyncSession

from backfiller.domain import (
    ACTIVE_RUN_STATES,
    BackfillState,
    EventKind,
    FailureReason,
    RunState,
    SkipReason,
    SlotState,
)
from backfiller.storage.records import (
    BackfillRecord,
    DaemonLeaseRecord,
    PartitionStateRecord,
    RunLogRecord,
    RunRecord,
    SlotRecord,
    table_of,
)
from backfiller.storage.repositories import INSERT_EVENT, EventRepository, event_row

ACTIVE = [RunState.QUEUED, RunState.RUNNING]
CHUNK = 500


slots_t = table_of(SlotRecord)
runs_t = table_of(RunRecord)
states_t = table_of(PartitionStateRecord)
logs_t = table_of(RunLogRecord)

_COUNTERS = {
    SlotState.PENDING: "pending",
    SlotState.QUEUED: "queued",
    SlotState.RUNNING: "running",
    SlotState.SUCCEEDED: "succeeded",
    SlotState.FAILED: "failed",
    SlotState.CANCELED: "canceled",
    SlotState.SKIPPED: "skipped",
}


@dataclass(frozen=True, slots=True)
class PlannedSlot:
    position: int
    partition_key: str
    skip_reason: SkipReason | None = None


@dataclass(frozen=True, slots=True)
class ClaimedRun:
    run_id: int
    slot_id: int
    position: int
    partition_key: str
    attempt: int


@dataclass(frozen=True, slots=True)
class RunStart:
    run_id: int
    at: datetime
    worker: str | None


@dataclass(frozen=True, slots=True)
class RunEnd:
    """How one run ended. ``counts_as_attempt`` is False when the daemon itself was lost."""

    run_id: int
    at: datetime
    status: RunState
    failure_reason: FailureReason | None = None
    error_message: str | None = None
    error_traceback: str | None = None
    worker: str | None = None
    started_at: datetime | None = None
    counts_as_attempt: bool = True


@dataclass(frozen=True, slots=True)
class RetryRule:
    max_retries: int = 0
    delay_seconds: float = 0.0


@dataclass(frozen=True, slots=True)
class LogEntry:
    run_id: int
    at: datetime
    level: str
    message: str


@dataclass
class Outcomes:
    """What a write of run results did, for the tick's report."""

    started: int = 0
    succeeded: int = 0
    failed: int = 0
    retried: int = 0
    canceled: int = 0
    ignored: int = 0


class _Moves:
    """Counter deltas per backfill, from slot moves."""

    def __init__(self) -> None:
        self.deltas: dict[int, Counter[str]] = defaultdict(Counter)

    def move(self, backfill_id: int, old: SlotState, new: SlotState, n: int = 1) -> None:
        if old is new or n == 0:
            return
        delta = self.deltas[backfill_id]
        delta[_COUNTERS[old]] -= n
        delta[_COUNTERS[new]] += n


class ExecutionRepository:
    def __init__(self, session: AsyncSession) -> None:
        self.session = session
        bind = session.get_bind()
        self.dialect = bind.dialect.name

    # -- reads -------------------------------------------------------------------------------

    async def backfills_in(self, statuses: Sequence[BackfillState]) -> list[BackfillRecord]:
        result = await self.session.execute(
            select(BackfillRecord)
            .where(BackfillRecord.status.in_(list(statuses)))
            .order_by(BackfillRecord.id)
            .execution_options(populate_existing=True)
        )
        return list(result.scalars())

    async def active_runs_by_job(self) -> dict[str, int]:
        result = await self.session.execute(
            select(RunRecord.job_name, func.count())
            .where(RunRecord.status.in_(ACTIVE))
            .group_by(RunRecord.job_name)
        )
        return {name: int(n) for name, n in result.all()}

    async def active_run_owners(self) -> list[str]:
        result = await self.session.execute(
            select(RunRecord.lease_owner)
            .where(RunRecord.status.in_(ACTIVE), RunRecord.lease_owner.is_not(None))
            .distinct()
        )
        return [str(o) for o in result.scalars()]

    async def runs_of_owner(self, owner: str) -> list[int]:
        result = await self.session.execute(
            select(RunRecord.id).where(RunRecord.lease_owner == owner, RunRecord.status.in_(ACTIVE))
        )
        return [int(r) for r in result.scalars()]

    # -- backfill status --------------------------------------------------------------------

    async def start_backfill(self, pk: int, now: datetime) -> bool:
        """REQUESTED -> RUNNING, once, with ``started_at`` and a STARTED event."""
        result = await self.session.execute(
            update(BackfillRecord)
            .where(BackfillRecord.id == pk, BackfillRecord.status == BackfillState.REQUESTED)
            .values(
                status=BackfillState.RUNNING,
                started_at=func.coalesce(BackfillRecord.started_at, now),
                updated_at=now,
                version=BackfillRecord.version + 1,
            )
            .execution_options(synchronize_session=False)
        )
        if not result.rowcount:  # type: ignore[attr-defined]
            return False
        await self.add_event(pk, EventKind.STARTED, now, None)
        return True

    async def fail_backfill(self, pk: int, error: str, now: datetime) -> bool:
        """A service-side fault (job or partitions gone): FAILED with the reason."""
        result = await self.session.execute(
            update(BackfillRecord)
            .where(
                BackfillRecord.id == pk,
                BackfillRecord.status.in_(
                    [
                        BackfillState.REQUESTED,
                        BackfillState.RUNNING,
                        BackfillState.PAUSED,
                        BackfillState.CANCELING,
                    ]
                ),
            )
            .values(
                status=BackfillState.FAILED,
                error=error,
                ended_at=now,
                updated_at=now,
                version=BackfillRecord.version + 1,
            )
            .execution_options(synchronize_session=False)
        )
        if not result.rowcount:  # type: ignore[attr-defined]
            return False
        await self.add_event(pk, EventKind.FAILED, now, error)
        return True

    async def complete_backfills(self, now: datetime) -> list[tuple[int, BackfillState]]:
        """RUNNING backfills with every partition final become COMPLETED_SUCCESS/FAILED."""
        done = (
            BackfillRecord.planned == BackfillRecord.total,
            BackfillRecord.pending == 0,
            BackfillRecord.queued == 0,
            BackfillRecord.running == 0,
        )
        result = await self.session.execute(
            select(BackfillRecord.id, BackfillRecord.failed, BackfillRecord.succeeded).where(
                BackfillRecord.status == BackfillState.RUNNING, *done
            )
        )
        completed: list[tuple[int, BackfillState]] = []
        for pk, failed, succeeded in result.all():
            to = BackfillState.COMPLETED_FAILED if failed else BackfillState.COMPLETED_SUCCESS
            moved = await self.session.execute(
                update(BackfillRecord)
                .where(
                    BackfillRecord.id == pk, BackfillRecord.status == BackfillState.RUNNING, *done
                )
                .values(status=to, ended_at=now, updated_at=now, version=BackfillRecord.version + 1)
                .execution_options(synchronize_session=False)
            )
            if moved.rowcount:  # type: ignore[attr-defined]
                await self.add_event(
                    pk, EventKind.COMPLETED, now, f"{succeeded} succeeded, {failed} failed"
                )
                completed.append((int(pk), to))
        return completed

    async def cancel_pending_slots(self, pk: int, now: datetime) -> int:
        """In a CANCELING backfill, cancel the planned slots that are still pending."""
        locked = await self.session.execute(
            select(BackfillRecord.id)
            .where(BackfillRecord.id == pk, BackfillRecord.status == BackfillState.CANCELING)
            .with_for_update()
        )
        if locked.scalar_one_or_none() is None:
            return 0
        result = await self.session.execute(
            update(SlotRecord)
            .where(SlotRecord.backfill_id == pk, SlotRecord.status == SlotState.PENDING)
            .values(status=SlotState.CANCELED, updated_at=now)
            .execution_options(synchronize_session=False)
        )
        n = int(result.rowcount)  # type: ignore[attr-defined]
        if n:
            await self.session.execute(
                update(BackfillRecord)
                .where(BackfillRecord.id == pk, BackfillRecord.status == BackfillState.CANCELING)
                .values(
                    pending=BackfillRecord.pending - n,
                    canceled=BackfillRecord.canceled + n,
                    updated_at=now,
                    version=BackfillRecord.version + 1,
                )
                .execution_options(synchronize_session=False)
            )
        return n

    async def add_event(
        self, backfill_id: int, kind: EventKind, at: datetime, message: str | None
    ) -> None:
        await EventRepository(self.session).add(backfill_id, kind, at, None, message)

    # -- planning ---------------------------------------------------------------------------

    async def plan_window(
        self, pk: int, expected_planned: int, slots: Sequence[PlannedSlot], now: datetime
    ) -> bool:
        """Materialize the slots of positions ``[expected_planned, +len(slots))``.

        Only while the backfill is REQUESTED or RUNNING and nobody planned these positions
        first; skipped partitions move from ``pending`` to ``skipped`` in the same update.
        """
        if not slots:
            return True
        skipped = sum(1 for s in slots if s.skip_reason is not None)
        result = await self.session.execute(
            update(BackfillRecord)
            .where(
                BackfillRecord.id == pk,
                BackfillRecord.planned == expected_planned,
                BackfillRecord.status.in_([BackfillState.REQUESTED, BackfillState.RUNNING]),
                BackfillRecord.pending >= skipped,
            )
            .values(
                planned=expected_planned + len(slots),
                pending=BackfillRecord.pending - skipped,
                skipped=BackfillRecord.skipped + skipped,
                updated_at=now,
                version=BackfillRecord.version + (1 if skipped else 0),
            )
            .execution_options(synchronize_session=False)
        )
        if not result.rowcount:  # type: ignore[attr-defined]
            return False
        await self.session.execute(
            insert(slots_t),
            [
                {
                    "backfill_id": pk,
                    "position": s.position,
                    "partition_key": s.partition_key,
                    "status": SlotState.SKIPPED if s.skip_reason else SlotState.PENDING,
                    "attempts": 0,
                    "free_attempts": 0,
                    "skip_reason": s.skip_reason.value if s.skip_reason else None,
                    "next_attempt_at": None,
                    "updated_at": now,
                }
                for s in slots
            ],
        )
        return True

    async def latest_states(self, job_name: str, keys: Sequence[str]) -> dict[str, RunState]:
        found: dict[str, RunState] = {}
        for i in range(0, len(keys), CHUNK):
            result = await self.session.execute(
                select(PartitionStateRecord.partition_key, PartitionStateRecord.status).where(
                    PartitionStateRecord.job_name == job_name,
                    PartitionStateRecord.partition_key.in_(list(keys[i : i + CHUNK])),
                )
            )
            found.update({k: RunState(s) for k, s in result.all()})
        return found

    # -- claiming ---------------------------------------------------------------------------

    async def _serialize_job(self, job_name: str) -> None:
        """Serialize claims of one job across daemons (PostgreSQL), for its run limit."""
        if self.dialect == "postgresql":
            await self.session.execute(
                text("SELECT pg_advisory_xact_lock(hashtext(:name))"), {"name": job_name}
            )

    async def claim_slots(
        self,
        pk: int,
        job_name: str,
        want: int,
        now: datetime,
        owner: str,
        *,
        backfill_limit: int | None = None,
        job_limit: int | None = None,
    ) -> list[ClaimedRun]:
        """Claim up to ``want`` pending slots of a RUNNING backfill, in launch order.

        Each claimed slot becomes QUEUED with a new QUEUED run leased to ``owner``. Slots whose
        partition has an active run elsewhere are passed over. Slots are taken with
        ``FOR UPDATE SKIP LOCKED`` on PostgreSQL, so concurrent daemons never take one slot
        twice; the unique index on active runs makes a second active run impossible anyway.
        """
        if want <= 0:
            return []
        locked = await self.session.execute(
            select(BackfillRecord.queued, BackfillRecord.running)
            .where(BackfillRecord.id == pk, BackfillRecord.status == BackfillState.RUNNING)
            .with_for_update()
        )
        row = locked.one_or_none()
        if row is None:
            return []
        allowed = want
        if backfill_limit is not None:
            allowed = min(allowed, backfill_limit - int(row.queued) - int(row.running))
        if job_limit is not None:
            await self._serialize_job(job_name)
        active_of_job = int(
            (
                await self.session.execute(
                    select(func.count()).where(
                        RunRecord.job_name == job_name, RunRecord.status.in_(ACTIVE)
                    )
                )
            ).scalar_one()
        )
        if job_limit is not None:
            allowed = min(allowed, job_limit - active_of_job)
        if allowed <= 0:
            return []
        candidates_stmt = (
            select(
                SlotRecord.id, SlotRecord.position, SlotRecord.partition_key, SlotRecord.attempts
            )
            .where(
                SlotRecord.backfill_id == pk,
                SlotRecord.status == SlotState.PENDING,
                or_(SlotRecord.next_attempt_at.is_(None), SlotRecord.next_attempt_at <= now),
            )
            .order_by(SlotRecord.position)
            .limit(allowed + active_of_job)
        )
        if self.dialect == "postgresql":
            candidates_stmt = candidates_stmt.with_for_update(skip_locked=True)
        candidates = (await self.session.execute(candidates_stmt)).all()
        if not candidates:
            return []
        busy: set[str] = set()
        if active_of_job:
            keys = [c.partition_key for c in candidates]
            for i in range(0, len(keys), CHUNK):
                result = await self.session.execute(
                    select(RunRecord.partition_key).where(
                        RunRecord.job_name == job_name,
                        RunRecord.partition_key.in_(keys[i : i + CHUNK]),
                        RunRecord.status.in_(ACTIVE),
                    )
                )
                busy.update(result.scalars())
        chosen = [c for c in candidates if c.partition_key not in busy][:allowed]
        if not chosen:
            return []
        moved = await self.session.execute(
            update(slots_t)
            .where(slots_t.c.id == bindparam("b_id"), slots_t.c.status == SlotState.PENDING)
            .values(
                status=SlotState.QUEUED,
                attempts=slots_t.c.attempts + 1,
                next_attempt_at=None,
                updated_at=now,
            ),
            [{"b_id": c.id} for c in chosen],
        )
        if moved.rowcount != len(chosen):  # type: ignore[attr-defined]
            raise ClaimConflict(f"backfill {pk}: slots changed while claiming")
        inserted = await self.session.execute(
            insert(runs_t).returning(runs_t.c.id, sort_by_parameter_order=True),
            [
                {
                    "backfill_id": pk,
                    "slot_id": c.id,
                    "job_name": job_name,
                    "partition_key": c.partition_key,
                    "attempt": int(c.attempts) + 1,
                    "status": RunState.QUEUED,
                    "queued_at": now,
                    "lease_owner": owner,
                }
                for c in chosen
            ],
        )
        run_ids = [int(r[0]) for r in inserted.all()]
        claimed = [
            ClaimedRun(rid, int(c.id), int(c.position), str(c.partition_key), int(c.attempts) + 1)
            for rid, c in zip(run_ids, chosen, strict=True)
        ]
        await self._record_partition_states(
            [(job_name, c.partition_key, RunState.QUEUED, c.run_id) for c in claimed], now
        )
        n = len(claimed)
        counted = await self.session.execute(
            update(BackfillRecord)
            .where(
                BackfillRecord.id == pk,
                BackfillRecord.status == BackfillState.RUNNING,
                BackfillRecord.pending >= n,
            )
            .values(
                pending=BackfillRecord.pending - n,
                queued=BackfillRecord.queued + n,
                updated_at=now,
                version=BackfillRecord.version + 1,
            )
            .execution_options(synchronize_session=False)
        )
        if not counted.rowcount:  # type: ignore[attr-defined]
            raise ClaimConflict(f"backfill {pk} changed while claiming")
        return claimed

    # -- results ----------------------------------------------------------------------------

    async def record_results(
        self,
        owner: str,
        now: datetime,
        *,
        starts: Sequence[RunStart] = (),
        ends: Sequence[RunEnd] = (),
        logs: Sequence[LogEntry] = (),
        retry_rules: Mapping[str, RetryRule] | None = None,
        skip_locked: bool = False,
    ) -> Outcomes:
        """Write what happened to runs leased to ``owner``: starts, ends (with retries), logs.

        A run no longer active or no longer leased to ``owner`` is left alone (a stale result).
        A failed attempt goes back to PENDING while the job's retry rule allows it (after its
        delay), unless the backfill is being canceled; attempts lost with a daemon
        (``counts_as_attempt=False``) are retried whatever the rule.
        """
        outcomes = Outcomes()
        retry_rules = retry_rules or {}
        end_by_id = {e.run_id: e for e in ends}
        start_by_id = {s.run_id: s for s in starts if s.run_id not in end_by_id}
        ids = list(end_by_id) + list(start_by_id)
        rows: list[Any] = []
        for i in range(0, len(ids), CHUNK):
            stmt = (
                select(
                    RunRecord.id,
                    RunRecord.status,
                    RunRecord.slot_id,
                    RunRecord.backfill_id,
                    RunRecord.job_name,
                    RunRecord.partition_key,
                    RunRecord.attempt,
                    SlotRecord.status.label("slot_status"),
                    SlotRecord.attempts,
                    SlotRecord.free_attempts,
                )
                .join(SlotRecord, SlotRecord.id == RunRecord.slot_id)
                .where(
                    RunRecord.id.in_(ids[i : i + CHUNK]),
                    RunRecord.lease_owner == owner,
                    RunRecord.status.in_(ACTIVE),
                )
            )
            if self.dialect == "postgresql":
                stmt = stmt.with_for_update(skip_locked=skip_locked)
            rows += (await self.session.execute(stmt)).all()
        outcomes.ignored = len(ids) - len(rows)
        if logs:
            await self.session.execute(
                insert(logs_t),
                [
                    {"run_id": e.run_id, "at": e.at, "level": e.level[:16], "message": e.message}
                    for e in logs
                ],
            )
        if not rows:
            return outcomes
        statuses = await self._statuses_of({int(r.backfill_id) for r in rows})
        moves = _Moves()
        run_updates: list[dict[str, Any]] = []
        start_updates: list[dict[str, Any]] = []
        slot_updates: list[dict[str, Any]] = []
        states: list[tuple[str, str, RunState, int]] = []
        events: list[dict[str, Any]] = []
        for r in rows:
            run_id, backfill_id = int(r.id), int(r.backfill_id)
            slot_status = SlotState(r.slot_status)
            end = end_by_id.get(run_id)
            if end is None:
                start = start_by_id[run_id]
                if RunState(r.status) is not RunState.QUEUED:
                    continue
                start_updates.append(
                    {"b_id": run_id, "b_at": start.at, "b_worker": start.worker, "b_owner": owner}
                )
                slot_updates.append(
                    _slot_change(r.slot_id, slot_status, SlotState.RUNNING, now, None, 0)
                )
                moves.move(backfill_id, slot_status, SlotState.RUNNING)
                states.append((r.job_name, r.partition_key, RunState.RUNNING, run_id))
                outcomes.started += 1
                continue
            backfill_state = statuses.get(backfill_id)
            stopping = backfill_state in (
                BackfillState.CANCELING,
                BackfillState.CANCELED,
                BackfillState.FAILED,
            )
            next_attempt_at: datetime | None = None
            free = 0
            if end.status is RunState.SUCCESS:
                new_slot = SlotState.SUCCEEDED
                outcomes.succeeded += 1
            elif end.status is RunState.CANCELED:
                new_slot = SlotState.CANCELED
                outcomes.canceled += 1
            else:
                rule = retry_rules.get(r.job_name, RetryRule())
                used = int(r.attempts) - int(r.free_attempts)
                if not end.counts_as_attempt:
                    free = 1
                    used -= 1
                if stopping:
                    new_slot = SlotState.FAILED if end.counts_as_attempt else SlotState.CANCELED
                elif not end.counts_as_attempt or used <= rule.max_retries:
                    new_slot = SlotState.PENDING
                    if end.counts_as_attempt and rule.delay_seconds > 0:
                        next_attempt_at = now + timedelta(seconds=rule.delay_seconds)
                    outcomes.retried += 1
                else:
                    new_slot = SlotState.FAILED
                outcomes.failed += 1
                if new_slot is SlotState.CANCELED:
                    outcomes.canceled += 1
                what = "will retry" if new_slot is SlotState.PENDING else "no retry left"
                if not end.counts_as_attempt and new_slot is SlotState.PENDING:
                    what = "retrying (not counted against the retry policy)"
                reason = (end.failure_reason or FailureReason.ERROR).value.upper()
                message = (
                    f"{r.partition_key} attempt {r.attempt} failed ({reason}): "
                    f"{(end.error_message or '')[:300]}; {what}"
                )
                events.append(event_row(backfill_id, EventKind.RUN_FAILED, end.at, None, message))
            run_updates.append(
                {
                    "b_id": run_id,
                    "b_owner": owner,
                    "b_status": end.status,
                    "b_reason": end.failure_reason,
                    "b_message": end.error_message,
                    "b_trace": end.error_traceback,
                    "b_started": end.started_at,
                    "b_ended": end.at,
                    "b_worker": end.worker,
                }
            )
            slot_updates.append(
                _slot_change(r.slot_id, slot_status, new_slot, now, next_attempt_at, free)
            )
            moves.move(backfill_id, slot_status, new_slot)
            states.append((r.job_name, r.partition_key, end.status, run_id))
        if start_updates:
            await self.session.execute(
                update(runs_t)
                .where(
                    runs_t.c.id == bindparam("b_id"),
                    runs_t.c.status == RunState.QUEUED,
                    runs_t.c.lease_owner == bindparam("b_owner"),
                )
                .values(
                    status=RunState.RUNNING,
                    started_at=bindparam("b_at"),
                    heartbeat_at=bindparam("b_at"),
                    worker=bindparam("b_worker"),
                ),
                start_updates,
            )
        if run_updates:
            await self.session.execute(
                update(runs_t)
                .where(
                    runs_t.c.id == bindparam("b_id"),
                    or_(runs_t.c.status == RunState.QUEUED, runs_t.c.status == RunState.RUNNING),
                    runs_t.c.lease_owner == bindparam("b_owner"),
                )
                .values(
                    status=bindparam("b_status"),
                    failure_reason=bindparam("b_reason"),
                    error_message=bindparam("b_message"),
                    error_traceback=bindparam("b_trace"),
                    started_at=func.coalesce(runs_t.c.started_at, bindparam("b_started")),
                    ended_at=bindparam("b_ended"),
                    worker=func.coalesce(bindparam("b_worker"), runs_t.c.worker),
                ),
                run_updates,
            )
        if slot_updates:
            await self.session.execute(
                update(slots_t)
                .where(slots_t.c.id == bindparam("b_id"), slots_t.c.status == bindparam("b_old"))
                .values(
                    status=bindparam("b_new"),
                    next_attempt_at=bindparam("b_next"),
                    free_attempts=slots_t.c.free_attempts + bindparam("b_free"),
                    updated_at=bindparam("b_now"),
                ),
                slot_updates,
            )
        if events:
            await self.session.execute(INSERT_EVENT, events)
        await self._record_partition_states(states, now)
        await self._apply_moves(moves, now)
        return outcomes

    async def _statuses_of(self, ids: Iterable[int]) -> dict[int, BackfillState]:
        result = await self.session.execute(
            select(BackfillRecord.id, BackfillRecord.status).where(BackfillRecord.id.in_(list(ids)))
        )
        return {int(pk): BackfillState(s) for pk, s in result.all()}

    async def _apply_moves(self, moves: _Moves, now: datetime) -> None:
        for backfill_id in sorted(moves.deltas):
            delta = moves.deltas[backfill_id]
            values: dict[str, Any] = {
                name: getattr(BackfillRecord, name) + n for name, n in delta.items() if n
            }
            if not values:
                continue
            await self.session.execute(
                update(BackfillRecord)
                .where(BackfillRecord.id == backfill_id)
                .values(**values, updated_at=now, version=BackfillRecord.version + 1)
                .execution_options(synchronize_session=False)
            )

    async def _record_partition_states(
        self, states: Sequence[tuple[str, str, RunState, int]], now: datetime
    ) -> None:
        """Upsert the latest outcome of each (job, partition); an older run never wins."""
        if not states:
            return
        latest: dict[tuple[str, str], tuple[RunState, int]] = {}
        for job, key, state, run_id in states:
            seen = latest.get((job, key))
            if seen is None or seen[1] <= run_id:
                latest[(job, key)] = (state, run_id)
        ins = (
            postgresql.insert(states_t) if self.dialect == "postgresql" else sqlite.insert(states_t)
        )
        stmt = ins.on_conflict_do_update(
            index_elements=[states_t.c.job_name, states_t.c.partition_key],
            set_={
                "status": ins.excluded.status,
                "run_id": ins.excluded.run_id,
                "updated_at": ins.excluded.updated_at,
            },
            where=or_(states_t.c.run_id.is_(None), states_t.c.run_id <= ins.excluded.run_id),
        )
        await self.session.execute(
            stmt,
            [
                {
                    "job_name": job,
                    "partition_key": key,
                    "status": state,
                    "run_id": run_id,
                    "updated_at": now,
                }
                for (job, key), (state, run_id) in latest.items()
            ],
        )

    # -- leases -----------------------------------------------------------------------------

    async def heartbeat(self, owner: str, now: datetime, started_at: datetime) -> None:
        """Renew this daemon's lease and the heartbeat of its running runs."""
        ins = (
            postgresql.insert(DaemonLeaseRecord)
            if self.dialect == "postgresql"
            else sqlite.insert(DaemonLeaseRecord)
        )
        await self.session.execute(
            ins.values(owner=owner, heartbeat_at=now, started_at=started_at).on_conflict_do_update(
                index_elements=[DaemonLeaseRecord.owner], set_={"heartbeat_at": now}
            )
        )
        await self.session.execute(
            update(RunRecord)
            .where(RunRecord.lease_owner == owner, RunRecord.status == RunState.RUNNING)
            .values(heartbeat_at=now)
            .execution_options(synchronize_session=False)
        )

    async def leases(self) -> dict[str, datetime]:
        result = await self.session.execute(
            select(DaemonLeaseRecord.owner, DaemonLeaseRecord.heartbeat_at)
        )
        return {str(o): at for o, at in result.all()}

    async def drop_lease(self, owner: str) -> None:
        await self.session.execute(
            delete(DaemonLeaseRecord).where(DaemonLeaseRecord.owner == owner)
        )


class ClaimConflict(Exception):
    """A claim lost a race; its transaction must roll back (the next tick tries again)."""


def _slot_change(
    slot_id: int,
    old: SlotState,
    new: SlotState,
    now: datetime,
    next_attempt_at: datetime | None,
    free: int,
) -> dict[str, Any]:
    return {
        "b_id": slot_id,
        "b_old": old,
        "b_new": new,
        "b_next": next_attempt_at,
        "b_free": free,
        "b_now": now,
    }


__all__ = [
    "ACTIVE_RUN_STATES",
    "ClaimConflict",
    "ClaimedRun",
    "ExecutionRepository",
    "LogEntry",
    "Outcomes",
    "PlannedSlot",
    "RetryRule",
    "RunEnd",
    "RunStart",
]
