"""The daemon's ticks: each one a function that tests call directly.

A tick takes the database, the definitions, a clock and (when it needs one) a launcher, does one
bounded piece of work in short transactions, and returns a :class:`TickReport`. Ticks keep no
state between calls beyond the caches passed in; the database is the source of truth, so any
tick may be interrupted (kill -9) at any point and the next daemon carries on.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable
from datetime import datetime

from backfiller.daemon.assets import launch_asset_runs, plan_asset_backfill
from backfiller.daemon.lease import (
    keep_lease,
    lease_valid,
    lose_lease,
    requeue_runs_of,
    retry_rules,
    take_over,
    take_over_expired,
)
from backfiller.daemon.ranges import claim_ranged_runs
from backfiller.daemon.report import TickReport
from backfiller.daemon.state import PLAN_WINDOW, DaemonState, Limits, new_owner
from backfiller.definitions.jobs import JobDefinition
from backfiller.definitions.loading import Definitions
from backfiller.domain import BackfillKind, BackfillState, EventKind, RunFinished, skip_reason_for
from backfiller.domain.fair_share import Contender, share_room
from backfiller.launchers.base import (
    DurableResults,
    Launcher,
    LauncherEvent,
    RunLogs,
    RunStarted,
    RunTask,
)
from backfiller.observability import daemon_metrics, tracing
from backfiller.planning import keys_between
from backfiller.services.selections import Pinned, Unpinnable
from backfiller.storage import Database
from backfiller.storage.errors import Conflict, LeaseLost, conflicts_translated
from backfiller.storage.execution import (
    Claim,
    ClaimedRun,
    ExecutionRepository,
    LogEntry,
    PlannedSlot,
    RunStart,
)
from backfiller.storage.records import BackfillRecord
from backfiller.storage.repositories import BackfillRepository
from backfiller.storage.run_credentials import Rights, mint_run_credentials

logger = logging.getLogger("backfiller.daemon")

Clock = Callable[[], datetime]

PLAN_CHUNKS_PER_TICK = 20

__all__ = [
    "PLAN_WINDOW",
    "DaemonState",
    "Limits",
    "TickReport",
    "complete_backfills",
    "heartbeat_and_recover",
    "launch_runs",
    "new_owner",
    "plan_backfills",
    "record_results",
    "requeue_runs_of",
    "retry_rules",
    "steer_backfills",
    "take_over",
]


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
        if record.kind is BackfillKind.ASSETS:
            report += await plan_asset_backfill(database, definitions, clock, state, record)
            continue
        pinned = await state.pins.pin(database, definitions, record)
        if isinstance(pinned, Unpinnable):
            async with database.write() as session:
                repo = ExecutionRepository(session)
                if await repo.fail_backfill(record.id, pinned.reason, clock()):
                    report.failed_backfills += 1
            continue
        if record.status is BackfillState.REQUESTED:
            async with database.write() as session:
                if await ExecutionRepository(session).start_backfill(record.id, clock()):
                    report.started_backfills += 1
                    state.forget_backfills()
        ahead = _ranged_window(definitions, record, state)
        report += await _plan_ahead(database, record, pinned, clock, state, ahead)
    return report


async def _plan_ahead(
    database: Database,
    record: BackfillRecord,
    pinned: Pinned,
    clock: Clock,
    state: DaemonState,
    ahead: tuple[int, int] | None = None,
) -> TickReport:
    report = TickReport()
    planned, pending = record.planned, record.pending
    window, enough = ahead or (state.plan_window, state.plan_window // 2)
    for _ in range(PLAN_CHUNKS_PER_TICK):
        unplanned = record.total - planned
        materialized_pending = pending - unplanned
        if unplanned <= 0 or materialized_pending >= enough:
            break
        stop = min(record.total, planned + window)
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


def _ranged_window(
    definitions: Definitions, record: BackfillRecord, state: DaemonState
) -> tuple[int, int] | None:
    """For a job with a backfill policy, the window to plan and the pending slots to keep
    planned: at least one whole chunk, so a claim never cuts a chunk at the planning edge."""
    job = definitions.get_job(record.job_name)
    if job is None or job.backfill_policy is None:
        return None
    per_run = job.backfill_policy.partitions_per_run
    return max(state.plan_window, per_run), max(state.plan_window // 2, per_run)


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
    the database, so across daemons too); each team's limit. Free room is shared by priority,
    then fairly between teams, then between backfills (``backfiller.domain.fair_share``).
    """
    report = TickReport()
    if not lease_valid(state, clock()) or _renewal_due(state, clock()):
        await keep_lease(database, clock, state, launcher)
    if not state.warmed:
        await state.warm(database)
    room = launcher.capacity
    if state.limits.max_runs is not None:
        room = min(room, state.limits.max_runs - len(launcher.active()))
    if room <= 0:
        return report
    in_flight = len(launcher.active())
    if room < state.claim_batch and room < in_flight:
        return report  # wait for a bigger batch while the launcher is busy
    report += await launch_asset_runs(database, definitions, clock, launcher, state, room)
    room -= report.claimed
    runnable = await _runnable(database, definitions, state)
    if room > 0 and runnable:
        await _share_and_claim(database, clock, launcher, state, runnable, room, report)
    return report


async def _share_and_claim(
    database: Database,
    clock: Clock,
    launcher: Launcher,
    state: DaemonState,
    runnable: list[Runnable],
    room: int,
    report: TickReport,
) -> None:
    """Share ``room`` between ``runnable`` (``backfiller.domain.fair_share``) and claim each
    one's share, higher priorities first; room a backfill could not use is shared again."""
    team_limits = await state.team_limits(database)
    team_active = _team_active(await state.running_backfills(database), state)
    full: set[int] = set()  # claimed less than asked: nothing more for it this tick
    for _ in range(SHARE_ROUNDS):
        contenders = [_contender(r, job, state) for r, job, _ in runnable if r.id not in full]
        shares = share_room(
            contenders,
            room,
            team_active=team_active,
            team_limits={t: state.team_limit(team_limits, t) for t in team_active},
        )
        if not shares:
            return
        # Higher priorities first; the plain claims of the round in one transaction.
        chosen = [
            (r, shares[r[0].id])
            for r in sorted(runnable, key=lambda r: -r[0].priority)
            if shares.get(r[0].id, 0) > 0
        ]
        try:
            claimed = await _claim_round(database, clock, state, chosen, report)
        except LeaseLost as exc:
            lose_lease(state, launcher, str(exc))
            return
        for (record, _, _), want in chosen:
            tasks = claimed.get(record.id, [])
            if tasks:
                tasks = tracing.start_runs(tasks, record.trace_parent)
                daemon_metrics.runs_submitted(t.run_id for t in tasks)
                launcher.submit(tasks)
                room -= len(tasks)
                report.claimed += len(tasks)
                state.claimed(record.id, len(tasks))
                team_active[record.team] = team_active.get(record.team, 0) + len(tasks)
            if len(tasks) < want:
                full.add(record.id)
        if room <= 0 or not full:
            return


SHARE_ROUNDS = 3
"""Rounds of sharing per tick: room that a backfill could not use (its partitions busy
elsewhere, a limit met) is shared again among the others."""


def _contender(record: BackfillRecord, job: JobDefinition, state: DaemonState) -> Contender:
    """A runnable backfill as the fair share sees it (``backfiller.domain.fair_share``)."""
    # Its counters as read (at most ``backfills_ttl`` old) bound what it may take; the claim
    # itself counts in the database. The runs claimed since they were read count as in flight
    # for the share only, so that one tick's claims weigh in the next tick's share.
    in_flight = record.queued + record.running
    active = in_flight + state.claimed_since_read.get(record.id, 0)
    wants = record.pending - (record.total - record.planned)
    cap = record.max_concurrent_runs
    if cap is not None and job.backfill_policy is None:  # a ranged run holds several: see claim
        wants = min(wants, cap - in_flight)
    return Contender(
        key=record.id,
        team=record.team,
        priority=record.priority,
        active=active,
        wants=max(0, wants),
        waited_since=record.updated_at.timestamp(),
    )


def _team_active(records: list[BackfillRecord], state: DaemonState) -> dict[str | None, int]:
    """Each team's runs in flight over its RUNNING backfills (job and asset ones)."""
    active: dict[str | None, int] = {}
    for r in records:
        n = r.queued + r.running + state.claimed_since_read.get(r.id, 0)
        active[r.team] = active.get(r.team, 0) + n
    return active


Runnable = tuple[BackfillRecord, JobDefinition, Pinned]


async def _runnable(
    database: Database, definitions: Definitions, state: DaemonState
) -> list[Runnable]:
    """The RUNNING backfills with materialized pending slots and room under their limit."""
    runnable: list[Runnable] = []
    for record in await state.running_backfills(database):
        if record.kind is not BackfillKind.JOB:
            continue
        if record.pending - (record.total - record.planned) <= 0:
            continue
        job = definitions.get_job(record.job_name)
        if job is None:
            continue
        if (
            record.max_concurrent_runs is not None
            and job.backfill_policy
            is None  # a ranged run holds several partitions: the claim counts
            and record.queued + record.running >= record.max_concurrent_runs
        ):
            continue
        pinned = await state.pins.pin(database, definitions, record)
        if isinstance(pinned, Unpinnable):
            continue  # the planner fails the backfill
        runnable.append((record, job, pinned))
    return runnable


async def _claim_round(
    database: Database,
    clock: Clock,
    state: DaemonState,
    chosen: list[tuple[Runnable, int]],
    report: TickReport,
) -> dict[int, list[RunTask]]:
    """Claim each backfill's share: ranged ones one by one, the plain ones together in one
    transaction, in backfill id order (the order every transaction locks backfill rows in);
    if any of those loses a race, they are claimed one by one instead."""
    tasks: dict[int, list[RunTask]] = {}
    plain = [(r, want) for r, want in chosen if r[1].backfill_policy is None]
    for runnable, want in chosen:
        if runnable[1].backfill_policy is not None:
            tasks[runnable[0].id] = await _claim(database, clock, state, runnable, want, report)
    if len(plain) == 1:
        ((runnable, want),) = plain
        tasks[runnable[0].id] = await _claim(database, clock, state, runnable, want, report)
    elif plain:
        together = await _claim_together(database, clock, state, plain, report)
        if together is None:
            for runnable, want in plain:
                tasks[runnable[0].id] = await _claim(database, clock, state, runnable, want, report)
        else:
            tasks.update(together)
    return tasks


async def _claim_together(
    database: Database,
    clock: Clock,
    state: DaemonState,
    plain: list[tuple[Runnable, int]],
    report: TickReport,
) -> dict[int, list[RunTask]] | None:
    """The plain claims of several backfills in one transaction (None: one lost a race)."""
    now = clock()
    if not lease_valid(state, now):
        return {}
    limits = await state.team_limits(database)
    ordered = sorted(plain, key=lambda item: item[0][0].id)
    began = time.perf_counter()
    claims: list[Claim] = []
    try:
        async with conflicts_translated(), database.write() as session:
            repo = ExecutionRepository(session)
            for (record, job, _), want in ordered:
                claims.append(
                    await repo.claim_slots(
                        record.id,
                        record.job_name,
                        want,
                        now,
                        state.owner,
                        reprocess=record.reprocess,
                        backfill_limit=record.max_concurrent_runs,
                        job_limit=job.max_concurrent_runs,
                        team=(record.team, state.team_limit(limits, record.team)),
                    )
                )
    except Conflict as exc:
        logger.info("a claim of %d backfills lost a race, one by one: %s", len(ordered), exc)
        report.conflicts += 1
        return None
    daemon_metrics.observe_claim(time.perf_counter() - began)
    tasks: dict[int, list[RunTask]] = {}
    rights: Rights = {}  # each creator's token read once for the round
    for ((record, job, pinned), _), claim in zip(ordered, claims, strict=True):
        report.skipped += claim.skipped
        tasks[record.id] = await _tasks_of(database, record, job, pinned, claim.runs, now, rights)
    return tasks


async def _claim(
    database: Database,
    clock: Clock,
    state: DaemonState,
    runnable: Runnable,
    want: int,
    report: TickReport,
) -> list[RunTask]:
    record, job, pinned = runnable
    if job.backfill_policy is not None:
        return await claim_ranged_runs(database, clock, state, runnable, want, report)
    now = clock()
    if not lease_valid(state, now):
        return []
    team_limit = state.team_limit(await state.team_limits(database), record.team)
    began = time.perf_counter()
    try:
        async with conflicts_translated(), database.write() as session:
            claim = await ExecutionRepository(session).claim_slots(
                record.id,
                record.job_name,
                want,
                now,
                state.owner,
                reprocess=record.reprocess,
                backfill_limit=record.max_concurrent_runs,
                job_limit=job.max_concurrent_runs,
                team=(record.team, team_limit),
            )
    except Conflict as exc:
        logger.info("claim of backfill %s lost a race, retrying later: %s", record.id, exc)
        report.conflicts += 1
        return []
    report.skipped += claim.skipped
    daemon_metrics.observe_claim(time.perf_counter() - began)
    return await _tasks_of(database, record, job, pinned, claim.runs, now)


async def _tasks_of(
    database: Database,
    record: BackfillRecord,
    job: JobDefinition,
    pinned: Pinned,
    claimed: list[ClaimedRun],
    now: datetime,
    rights: Rights | None = None,
) -> list[RunTask]:
    """The launcher's tasks of a claim's runs, each with its credential."""
    tags = {**dict(job.tags), **{str(k): str(v) for k, v in record.tags}}
    ids, timeout = [c.run_id for c in claimed], job.timeout_seconds
    credentials = await mint_run_credentials(
        database, record.id, record.creator, ids, now, timeout, rights
    )
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
                credential=credentials.get(c.run_id),
            )
        )
    return tasks


def _renewal_due(state: DaemonState, now: datetime) -> bool:
    """Renew from a claim when less than half the lease is left (the lease tick renews first
    in a running daemon; this keeps ticks called on their own, as tests do, under a lease)."""
    if state.lease_expires_at is None:
        return True
    return state.lease_expires_at - now < state.lease_timeout / 2


# -- results -------------------------------------------------------------------------------------


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
    ends: list[RunFinished] = []
    logs: list[LogEntry] = []
    for event in batch:
        if isinstance(event, RunStarted):
            starts.append(RunStart(event.run_id, event.at, event.worker))
        elif isinstance(event, RunFinished):
            ends.append(event)
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
    if isinstance(launcher, DurableResults):
        launcher.recorded(batch)
        if outcomes.written:
            launcher.discard_results(state.owner, outcomes.written)
    if outcomes.retried or outcomes.taken_back:
        # Slots went back to PENDING: the cached running backfills' counts say otherwise.
        state.forget_backfills()
    return TickReport(
        started=outcomes.started,
        succeeded=outcomes.succeeded,
        failed=outcomes.failed,
        retried=outcomes.retried,
        canceled=outcomes.canceled,
        taken_back=outcomes.taken_back,
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


async def heartbeat_and_recover(
    database: Database,
    definitions: Definitions,
    clock: Clock,
    state: DaemonState,
    launcher: Launcher | None = None,
) -> TickReport:
    """Renew this daemon's lease first; then take over the runs of expired leases.

    See ``backfiller.daemon.lease``: a daemon's runs are taken over only once its lease
    deadline has passed, by when its workers have stopped.
    """
    await keep_lease(database, clock, state, launcher)
    return await take_over_expired(database, definitions, clock, state, launcher)
