"""The daemon's ticks: each one a function that tests call directly.

A tick takes the database, the definitions, a clock and (when it needs one) a launcher, does one
bounded piece of work in short transactions, and returns a :class:`TickReport`. Ticks keep no
state between calls beyond the caches passed in; the database is the source of truth, so any
tick may be interrupted (kill -9) at any point and the next daemon carries on.
"""

from __future__ import annotations

import logging
import os
import socket
import time
import uuid
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, fields
from datetime import datetime, timedelta

from sqlalchemy.exc import DBAPIError, IntegrityError

from backfiller.daemon.selections import PinnedSelection, SelectionCache
from backfiller.definitions.jobs import JobDefinition
from backfiller.definitions.loading import Definitions
from backfiller.domain import BackfillState, EventKind, FailureReason, RunState, skip_reason_for
from backfiller.launchers.base import (
    Launcher,
    LauncherEvent,
    Outcome,
    RunFinished,
    RunLogs,
    RunStarted,
    RunTask,
)
from backfiller.observability import daemon_metrics, tracing
from backfiller.planning import keys_between
from backfiller.storage import Database
from backfiller.storage.execution import (
    ClaimConflict,
    ExecutionRepository,
    LogEntry,
    PlannedSlot,
    RetryRule,
    RunEnd,
    RunStart,
)
from backfiller.storage.records import BackfillRecord
from backfiller.storage.repositories import BackfillRepository

logger = logging.getLogger("backfiller.daemon")

Clock = Callable[[], datetime]

PLAN_WINDOW = 1_000
PLAN_CHUNKS_PER_TICK = 20


@dataclass
class TickReport:
    """What one tick did. Every field counts things; zero means nothing happened."""

    planned: int = 0
    skipped: int = 0
    started_backfills: int = 0
    failed_backfills: int = 0
    completed_backfills: int = 0
    canceled_backfills: int = 0
    claimed: int = 0
    started: int = 0
    succeeded: int = 0
    failed: int = 0
    retried: int = 0
    canceled: int = 0
    lost: int = 0
    log_lines: int = 0
    conflicts: int = 0

    def __add__(self, other: TickReport) -> TickReport:
        return TickReport(
            **{f.name: getattr(self, f.name) + getattr(other, f.name) for f in fields(self)}
        )

    @property
    def busy(self) -> bool:
        return any(getattr(self, f.name) for f in fields(self))


def new_owner() -> str:
    """A daemon's lease owner: host, pid and a nonce (a restarted daemon is a new owner)."""
    return f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"


@dataclass
class Limits:
    """Run limits of one daemon.

    Args:
        max_runs: runs this daemon keeps active at once (queued and running), None for the
            launcher's capacity only.
    """

    max_runs: int | None = None


@dataclass
class DaemonState:
    """What ticks of one daemon share: who it is and its caches."""

    owner: str = field(default_factory=new_owner)
    started_at: datetime | None = None
    selections: SelectionCache = field(default_factory=SelectionCache)
    limits: Limits = field(default_factory=Limits)
    plan_window: int = PLAN_WINDOW
    lease_timeout: timedelta = timedelta(seconds=30)
    claim_batch: int = 16
    """Claim when this much room is free, or when more room is free than runs are in flight."""
    backfills_ttl: float = 0.25
    """How long the list of RUNNING backfills is reused between claims (seconds)."""
    _running: tuple[float, list[BackfillRecord]] | None = None

    async def running_backfills(self, database: Database) -> list[BackfillRecord]:
        cached = self._running
        if cached is not None and time.monotonic() - cached[0] < self.backfills_ttl:
            return cached[1]
        async with database.read() as session:
            records = await ExecutionRepository(session).backfills_in([BackfillState.RUNNING])
        self._running = (time.monotonic(), records)
        return records

    def forget_backfills(self) -> None:
        self._running = None


def retry_rules(definitions: Definitions) -> dict[str, RetryRule]:
    return {j.name: RetryRule(j.retry.max_retries, j.retry.delay_seconds) for j in definitions.jobs}


# -- plan ----------------------------------------------------------------------------------------


async def plan_backfills(
    database: Database, definitions: Definitions, clock: Clock, state: DaemonState
) -> TickReport:
    """Start requested backfills and materialize slots a bounded window ahead of launching.

    A backfill whose job or partitions vanished from the definitions becomes FAILED.
    """
    report = TickReport()
    async with database.read() as session:
        records = await ExecutionRepository(session).backfills_in(
            [BackfillState.REQUESTED, BackfillState.RUNNING]
        )
    for record in records:
        pinned = await _pin(database, definitions, state, record)
        if isinstance(pinned, str):
            async with database.write() as session:
                if await ExecutionRepository(session).fail_backfill(record.id, pinned, clock()):
                    report.failed_backfills += 1
            continue
        if record.status is BackfillState.REQUESTED:
            async with database.write() as session:
                if await ExecutionRepository(session).start_backfill(record.id, clock()):
                    report.started_backfills += 1
                    state.forget_backfills()
        report += await _plan_ahead(database, record, pinned, clock, state)
    return report


async def _pin(
    database: Database, definitions: Definitions, state: DaemonState, record: BackfillRecord
) -> PinnedSelection | str:
    job = definitions.get_job(record.job_name)
    if job is None:
        return f"job {record.job_name!r} is no longer in the definitions"
    return await state.selections.pin(database, job, record)


async def _plan_ahead(
    database: Database,
    record: BackfillRecord,
    pinned: PinnedSelection,
    clock: Clock,
    state: DaemonState,
) -> TickReport:
    report = TickReport()
    planned, pending = record.planned, record.pending
    for _ in range(PLAN_CHUNKS_PER_TICK):
        unplanned = record.total - planned
        materialized_pending = pending - unplanned
        if unplanned <= 0 or materialized_pending >= state.plan_window // 2:
            break
        stop = min(record.total, planned + state.plan_window)
        keys = keys_between(pinned.resolved, record.order, pinned.space, planned, stop)
        reasons: dict[str, object] = {}
        async with database.write() as session:
            repo = ExecutionRepository(session)
            if record.reprocess.value != "all":
                latest = await repo.latest_states(record.job_name, keys)
                for key, run_state in latest.items():
                    reason = skip_reason_for(record.reprocess, run_state)
                    if reason is not None:
                        reasons[key] = reason
            slots = [
                PlannedSlot(planned + i, key, reasons.get(key))  # type: ignore[arg-type]
                for i, key in enumerate(keys)
            ]
            ok = await repo.plan_window(record.id, planned, slots, clock())
        if not ok:
            break
        skipped = len(reasons)
        report.planned += len(slots)
        report.skipped += skipped
        planned += len(slots)
        pending -= skipped
    return report


# -- launch --------------------------------------------------------------------------------------


async def launch_runs(
    database: Database,
    definitions: Definitions,
    clock: Clock,
    launcher: Launcher,
    state: DaemonState,
) -> TickReport:
    """Claim pending slots within every limit and hand their runs to the launcher.

    Limits: the launcher's capacity and the daemon's ``max_runs``; each backfill's
    ``maxConcurrentRuns``; each job's ``max_concurrent_runs`` across all backfills (counted in
    the database, so across daemons too). Free room is shared evenly among backfills.
    """
    report = TickReport()
    room = launcher.capacity
    if state.limits.max_runs is not None:
        room = min(room, state.limits.max_runs - len(launcher.active()))
    if room <= 0:
        return report
    in_flight = len(launcher.active())
    if room < state.claim_batch and room < in_flight:
        return report  # wait for a bigger batch while the launcher is busy
    records = await state.running_backfills(database)
    runnable: list[tuple[BackfillRecord, JobDefinition, PinnedSelection]] = []
    for record in records:
        if record.pending - (record.total - record.planned) <= 0:
            continue
        if record.max_concurrent_runs is not None and (
            record.queued + record.running >= record.max_concurrent_runs
        ):
            continue
        job = definitions.get_job(record.job_name)
        if job is None:
            continue
        pinned = await state.selections.pin(database, job, record)
        if isinstance(pinned, str):
            continue
        runnable.append((record, job, pinned))
    while room > 0 and runnable:
        share = max(1, room // len(runnable))
        still: list[tuple[BackfillRecord, JobDefinition, PinnedSelection]] = []
        for record, job, pinned in runnable:
            if room <= 0:
                break
            want = min(share, room)
            tasks = await _claim(database, clock, state, record, job, pinned, want, report)
            if tasks:
                tasks = tracing.start_runs(tasks, record.trace_parent)
                daemon_metrics.runs_submitted(t.run_id for t in tasks)
                launcher.submit(tasks)
                room -= len(tasks)
                report.claimed += len(tasks)
            if len(tasks) == want:
                still.append((record, job, pinned))
        if still == runnable and share >= room:
            break
        runnable = still
    return report


async def _claim(
    database: Database,
    clock: Clock,
    state: DaemonState,
    record: BackfillRecord,
    job: JobDefinition,
    pinned: PinnedSelection,
    want: int,
    report: TickReport,
) -> list[RunTask]:
    now = clock()
    began = time.perf_counter()
    try:
        async with database.write() as session:
            claimed = await ExecutionRepository(session).claim_slots(
                record.id,
                record.job_name,
                want,
                now,
                state.owner,
                backfill_limit=record.max_concurrent_runs,
                job_limit=job.max_concurrent_runs,
            )
    except (ClaimConflict, IntegrityError) as exc:
        logger.info("claim of backfill %s lost a race, retrying later: %s", record.id, exc)
        report.conflicts += 1
        return []
    except DBAPIError as exc:
        if not _is_transient(exc):
            raise
        logger.info("claim of backfill %s hit a transient error: %s", record.id, exc)
        report.conflicts += 1
        return []
    daemon_metrics.observe_claim(time.perf_counter() - began)
    tags = {**dict(job.tags), **{str(k): str(v) for k, v in record.tags}}
    tasks: list[RunTask] = []
    for c in claimed:
        window = pinned.space.window(c.partition_key)
        tasks.append(
            RunTask(
                run_id=c.run_id,
                backfill_id=record.id,
                job_name=record.job_name,
                partition_key=c.partition_key,
                attempt=c.attempt,
                run_config=record.run_config or {},
                tags=tags,
                partition_start=window[0] if window else None,
                partition_end=window[1] if window else None,
                timeout_seconds=job.timeout_seconds,
            )
        )
    return tasks


def _is_transient(exc: DBAPIError) -> bool:
    code = getattr(getattr(exc, "orig", None), "sqlstate", None)
    # serialization failure, deadlock, lock not available
    return code in ("40001", "40P01", "55P03")


# -- results -------------------------------------------------------------------------------------

_OUTCOMES: dict[Outcome, tuple[RunState, FailureReason | None]] = {
    Outcome.SUCCESS: (RunState.SUCCESS, None),
    Outcome.ERROR: (RunState.FAILED, FailureReason.ERROR),
    Outcome.TIMEOUT: (RunState.FAILED, FailureReason.TIMEOUT),
    Outcome.WORKER_LOST: (RunState.FAILED, FailureReason.WORKER_LOST),
    Outcome.CANCELED: (RunState.CANCELED, None),
}


async def record_results(
    database: Database,
    definitions: Definitions,
    clock: Clock,
    launcher: Launcher,
    state: DaemonState,
    events: Iterable[LauncherEvent] | None = None,
) -> TickReport:
    """Write what the launcher reported since the last call, in one transaction.

    A run that started and ended between two calls is written once, straight to its end.
    """
    batch = list(launcher.poll() if events is None else events)
    if not batch:
        return TickReport()
    starts: list[RunStart] = []
    ends: list[RunEnd] = []
    logs: list[LogEntry] = []
    started_at: dict[int, datetime] = {}
    for event in batch:
        if isinstance(event, RunStarted):
            starts.append(RunStart(event.run_id, event.at, event.worker))
            started_at[event.run_id] = event.at
        elif isinstance(event, RunFinished):
            status, reason = _OUTCOMES[event.outcome]
            ends.append(
                RunEnd(
                    run_id=event.run_id,
                    at=event.at,
                    status=status,
                    failure_reason=reason,
                    error_message=event.error_message,
                    error_traceback=event.error_traceback,
                    worker=event.worker,
                    started_at=started_at.get(event.run_id),
                )
            )
        elif isinstance(event, RunLogs):
            logs += [LogEntry(event.run_id, ln.at, ln.level, ln.message) for ln in event.lines]
    async with database.write() as session:
        outcomes = await ExecutionRepository(session).record_results(
            state.owner,
            clock(),
            starts=starts,
            ends=ends,
            logs=logs,
            retry_rules=retry_rules(definitions),
        )
    if outcomes.retried:
        # Slots went back to PENDING: the cached running backfills' counts say otherwise.
        state.forget_backfills()
    return TickReport(
        started=outcomes.started,
        succeeded=outcomes.succeeded,
        failed=outcomes.failed,
        retried=outcomes.retried,
        canceled=outcomes.canceled,
        log_lines=len(logs),
    )


# -- steer and finish ----------------------------------------------------------------------------


async def steer_backfills(
    database: Database, clock: Clock, launcher: Launcher, state: DaemonState
) -> TickReport:
    """Carry out cancels: pending slots canceled, this daemon's runs stopped, then CANCELED.

    Pause needs no work here: a paused backfill is simply not claimed from.
    """
    report = TickReport()
    async with database.read() as session:
        records = await ExecutionRepository(session).backfills_in([BackfillState.CANCELING])
    if not records:
        return report
    active = launcher.active()
    for record in records:
        async with database.write() as session:
            report.canceled += await ExecutionRepository(session).cancel_pending_slots(
                record.id, clock()
            )
        mine = [run_id for run_id, task in active.items() if task.backfill_id == record.id]
        launcher.cancel(mine)
        async with database.write() as session:
            now = clock()
            if await BackfillRepository(session).cancel_idle(record.id, now):
                await ExecutionRepository(session).add_event(
                    record.id, EventKind.CANCELED, now, None
                )
                report.canceled_backfills += 1
    return report


async def complete_backfills(database: Database, clock: Clock) -> TickReport:
    """RUNNING backfills whose partitions are all final become COMPLETED_*."""
    async with database.write() as session:
        done = await ExecutionRepository(session).complete_backfills(clock())
    return TickReport(completed_backfills=len(done))


# -- leases and lost runs ------------------------------------------------------------------------


def _owner_is_dead(
    owner: str, heartbeat_at: datetime | None, now: datetime, timeout: timedelta
) -> bool:
    if heartbeat_at is None or now - heartbeat_at > timeout:
        return True
    host, _, rest = owner.partition(":")
    pid_text = rest.partition(":")[0]
    if host == socket.gethostname() and pid_text.isdigit():
        pid = int(pid_text)
        if pid == os.getpid():
            return False
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        except PermissionError:
            return False
    return False


async def heartbeat_and_recover(
    database: Database, definitions: Definitions, clock: Clock, state: DaemonState
) -> TickReport:
    """Renew this daemon's lease; requeue the runs of daemons that are gone.

    A daemon is gone when its lease is older than ``lease_timeout``, or at once when it ran on
    this host and its process no longer exists. Its workers died with it (local workers never
    outlive their daemon), so each of its active runs ends FAILED with ``WORKER_LOST`` and its
    slot is retried as a new attempt that does not count against the job's retry policy.
    """
    report = TickReport()
    now = clock()
    async with database.write() as session:
        repo = ExecutionRepository(session)
        await repo.heartbeat(state.owner, now, state.started_at or now)
    async with database.read() as session:
        repo = ExecutionRepository(session)
        owners = await repo.active_run_owners()
        leases = await repo.leases()
    for owner in owners:
        if owner == state.owner or not _owner_is_dead(
            owner, leases.get(owner), now, state.lease_timeout
        ):
            continue
        report += await requeue_runs_of(database, definitions, clock, owner, "the daemon was lost")
    for owner, at in leases.items():
        if owner != state.owner and owner not in owners and now - at > state.lease_timeout * 10:
            async with database.write() as session:
                await ExecutionRepository(session).drop_lease(owner)
    return report


async def requeue_runs_of(
    database: Database, definitions: Definitions, clock: Clock, owner: str, why: str
) -> TickReport:
    """End every active run leased to ``owner`` as WORKER_LOST and retry its slot."""
    report = TickReport()
    while True:
        async with database.read() as session:
            run_ids = (await ExecutionRepository(session).runs_of_owner(owner))[:500]
        if not run_ids:
            return report
        now = clock()
        ends = [
            RunEnd(
                run_id=r,
                at=now,
                status=RunState.FAILED,
                failure_reason=FailureReason.WORKER_LOST,
                error_message=why,
                counts_as_attempt=False,
            )
            for r in run_ids
        ]
        async with database.write() as session:
            outcomes = await ExecutionRepository(session).record_results(
                owner, now, ends=ends, retry_rules=retry_rules(definitions), skip_locked=True
            )
        report.lost += outcomes.failed
        report.retried += outcomes.retried
        if outcomes.failed == 0:
            return report
