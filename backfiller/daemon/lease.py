"""The daemon's lease, and taking over the runs of daemons whose lease has expired.

A daemon may claim and run only under a valid lease: a row with a deadline ``expires_at``,
``lease_seconds`` after the renewal began, renewed every ``heartbeat_seconds``. After each
renewal the launcher is told to stop every run by ``stop_by``, ``STOP_MARGIN`` of the lease
before its deadline; the local pool's workers watch that time themselves, so they stop even when
their daemon is SIGKILLed or cut off from the database.

When a renewal finds the lease expired or taken over (or ``stop_by`` passes before a renewal
succeeds), the daemon logs it, kills its runs (``revoke_lease``) and starts over under a new
owner name; its old runs are taken over like any dead daemon's.

Another daemon takes over an owner's runs only once the owner's lease deadline has passed
(checked and the row deleted in the takeover's transaction), never because a process id is gone:
by then the owner's workers have stopped. A run that ended while its daemon was dead is recorded
from the launcher's durable results instead of being run again.

Clocks: deadlines are written with the renewing daemon's clock and compared with the taking-over
daemon's, so daemons' clocks must agree within ``STOP_MARGIN`` of a lease (NTP does far better).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from datetime import datetime, timedelta

from backfiller.daemon.report import TickReport
from backfiller.daemon.state import DaemonState, new_owner
from backfiller.definitions.loading import Definitions
from backfiller.domain import Outcome, RunFinished
from backfiller.launchers.base import (
    DurableResults,
    Launcher,
    LeasedLauncher,
    RunLogs,
    RunStarted,
)
from backfiller.storage import Database
from backfiller.storage.execution import (
    ExecutionRepository,
    LogEntry,
    Outcomes,
    RetryRule,
    RunStart,
)

logger = logging.getLogger("backfiller.daemon")

Clock = Callable[[], datetime]

STOP_MARGIN = 0.2
"""Runs stop this fraction of the lease before its deadline."""

TAKEOVER_BATCH = 500


def retry_rules(definitions: Definitions) -> dict[str, RetryRule]:
    return {
        j.name: RetryRule(j.retry.max_retries, j.retry.delay_seconds, j.lost_worker_retries)
        for j in definitions.runnables
    }


async def keep_lease(
    database: Database, clock: Clock, state: DaemonState, launcher: Launcher | None = None
) -> bool:
    """Acquire or renew this daemon's lease; on loss, stop every run and start over.

    Returns whether the daemon holds a valid lease now. Raises when the database is away
    (the lease then runs out on its own, and the launcher stops the runs at ``stop_by``).
    """
    began = clock()
    if state.stop_by is not None and began >= state.stop_by:
        lose_lease(state, launcher, "its lease ran out before it could be renewed")
    seconds = state.lease_timeout.total_seconds()
    expires_at = began + timedelta(seconds=seconds)
    async with database.write() as session:
        repo = ExecutionRepository(session)
        if state.lease_expires_at is None:
            await repo.acquire_lease(state.owner, began, expires_at, state.started_at or began)
            renewed = True
        else:
            renewed = await repo.renew_lease(state.owner, began, expires_at)
    if not renewed:
        lose_lease(state, launcher, "its lease expired or was taken over")
        return await keep_lease(database, clock, state, launcher)
    state.lease_expires_at = expires_at
    state.stop_by = began + timedelta(seconds=seconds * (1 - STOP_MARGIN))
    if isinstance(launcher, LeasedLauncher):
        launcher.extend_lease(state.owner, state.stop_by)
    return True


def lose_lease(state: DaemonState, launcher: Launcher | None, why: str) -> None:
    """Stop every run of this daemon at once and forget them; start over as a new owner."""
    stopped = _stop_everything(launcher)
    old = state.owner
    state.owner = new_owner()
    state.lease_expires_at = None
    state.stop_by = None
    state.forget_backfills()
    state.lost_leases += 1
    logger.error(
        "daemon %s lost its lease (%s): claims nothing more, killed its %d runs; "
        "starting over as %s (its runs go back to their backfills once the lease deadline "
        "has passed)",
        old,
        why,
        len(stopped),
        state.owner,
    )


def _stop_everything(launcher: Launcher | None) -> list[int]:
    """Kill the launcher's runs (a launcher without leases can only be asked to cancel them:
    best effort, see ``launchers.base.LeasedLauncher``)."""
    if isinstance(launcher, LeasedLauncher):
        return [task.run_id for task in launcher.revoke_lease()]
    if launcher is None:
        return []
    running = list(launcher.active())
    launcher.cancel(running)
    return running


def lease_valid(state: DaemonState, now: datetime) -> bool:
    """Whether this daemon may claim now (its runs would have time to start)."""
    return state.stop_by is not None and now < state.stop_by


async def take_over_expired(
    database: Database,
    definitions: Definitions,
    clock: Clock,
    state: DaemonState,
    launcher: Launcher | None = None,
) -> TickReport:
    """Take over the runs of every other owner whose lease has expired (or is gone)."""
    report = TickReport()
    now = clock()
    async with database.read() as session:
        repo = ExecutionRepository(session)
        owners = await repo.active_run_owners()
        leases = await repo.leases()
    for owner in owners:
        if owner == state.owner:
            continue
        deadline = leases.get(owner)
        if deadline is not None and deadline > now:
            continue
        report += await take_over(database, definitions, clock, owner, launcher)
    for owner, deadline in leases.items():
        stale = deadline is None or now - deadline > state.lease_timeout * 10
        if owner != state.owner and owner not in owners and stale:
            async with database.write() as session:
                await ExecutionRepository(session).drop_lease(owner)
            if isinstance(launcher, DurableResults):
                await asyncio.to_thread(launcher.forget_owner, owner)
    return report


async def take_over(
    database: Database,
    definitions: Definitions,
    clock: Clock,
    owner: str,
    launcher: Launcher | None = None,
) -> TickReport:
    """End the active runs of ``owner`` (lease expired): durable results, else lost.

    Batch by batch, each in one transaction under ``owner``'s lease row lock (so that two
    daemons taking ``owner`` over at once never both read its durable results): the launcher's
    durable results say how runs ended while their daemon was dead, and which never started
    (those go back to their backfill without using any budget); the others end WORKER_LOST. A
    result is recorded only for the run's current attempt (its fencing token). The lease row
    is dropped, and the launcher forgets ``owner``, only once no active run of it is left.
    """
    report = TickReport()
    rules = retry_rules(definitions)
    while True:
        now = clock()
        async with database.write() as session:
            repo = ExecutionRepository(session)
            if not await repo.lock_expired_lease(owner, now):
                return report
            attempts = await repo.active_attempts_of_owner(owner, TAKEOVER_BATCH)
            if not attempts:
                await repo.drop_lease(owner)
            else:
                kept, lines, starts = await _durable_results(launcher, owner, attempts)
                ends = await _ends(repo, launcher, attempts, kept, now)
                outcomes = await repo.record_results(
                    owner, now, starts=starts, ends=ends, retry_rules=rules, skip_locked=True
                )
                # The log lines of the runs ended here only: a run locked by another
                # transaction is taken over again later, with its lines.
                written = set(outcomes.written)
                logs = [
                    LogEntry(e.run_id, line.at, line.level, line.message)
                    for e in lines
                    if e.run_id in written
                    for line in e.lines
                ]
                if logs:
                    await repo.record_results(owner, now, logs=logs)
        if not attempts:
            if isinstance(launcher, DurableResults):
                await asyncio.to_thread(launcher.forget_owner, owner)
            return report
        if isinstance(launcher, DurableResults):
            launcher.discard_results(owner, outcomes.written)
        report += _takeover_report(owner, kept, outcomes)
        if not outcomes.written:
            return report  # its runs are locked by another transaction: the next tick retries


async def _ends(
    repo: ExecutionRepository,
    launcher: Launcher | None,
    attempts: dict[int, int],
    kept: dict[int, RunFinished],
    now: datetime,
) -> list[RunFinished]:
    """The ends of a dead daemon's runs ``attempts``: the kept ones, else unknown ones.

    A run with no start written and nothing its worker sent (no heartbeat, log line or end),
    with a launcher that keeps every such sign (``keeps_every_sign``: Celery's dead daemon's
    queue), never executed: it goes back to its backfill at no cost. Otherwise it is lost."""
    unknown = [r for r in attempts if r not in kept]
    keeps_all = getattr(launcher, "keeps_every_sign", False)
    queued = await repo.queued_of(unknown) if keeps_all else set()
    return [kept.get(r) or _unknown_end(r, now, r in queued) for r in attempts]


def _unknown_end(run_id: int, now: datetime, queued: bool) -> RunFinished:
    """The end of a dead daemon's run that its launcher kept nothing of."""
    if queued:
        why = "taken back: its daemon died before it started"
        return RunFinished(run_id, now, Outcome.NOT_STARTED, why)
    return RunFinished(run_id, now, Outcome.WORKER_LOST, "the daemon running it was lost")


async def _durable_results(
    launcher: Launcher | None, owner: str, attempts: dict[int, int]
) -> tuple[dict[int, RunFinished], list[RunLogs], list[RunStart]]:
    """The launcher's durable results of these runs, at their current attempt only, the log
    lines it kept of them (of their latest attempt), and the starts of the runs that ran (a
    run whose start its dead daemon had not written yet shows when it started)."""
    if not isinstance(launcher, DurableResults):
        return {}, [], []
    found = await asyncio.to_thread(launcher.durable_results, owner, list(attempts))
    lines = [e for e in found if isinstance(e, RunLogs) and e.run_id in attempts]
    kept = {}
    for end in (e for e in found if isinstance(e, RunFinished)):
        current = attempts.get(end.run_id)
        if current is None:
            continue
        if end.attempt is not None and end.attempt != current:
            logger.warning(
                "refused a kept result of run %s: attempt %s, the run is at attempt %s",
                end.run_id,
                end.attempt,
                current,
            )
            continue
        kept[end.run_id] = end
    starts = [
        RunStart(e.run_id, e.at, e.worker)
        for e in found
        if isinstance(e, RunStarted)
        and e.run_id in kept
        and kept[e.run_id].outcome is not Outcome.NOT_STARTED
        and e.attempt in (None, attempts.get(e.run_id))
    ]
    return kept, lines, starts


def _takeover_report(owner: str, kept: dict[int, RunFinished], outcomes: Outcomes) -> TickReport:
    recovered = sum(
        1 for r in outcomes.written if r in kept and kept[r].outcome is not Outcome.NOT_STARTED
    )
    if outcomes.written:
        logger.warning(
            "took over %d runs of %s (lease expired): %d results kept by its workers recorded, "
            "%d never started taken back, the rest requeued as WORKER_LOST",
            len(outcomes.written),
            owner,
            recovered,
            outcomes.taken_back,
        )
    lost = len(outcomes.written) - recovered - outcomes.taken_back
    return TickReport(
        lost=lost, retried=outcomes.retried, recovered=recovered, taken_back=outcomes.taken_back
    )


async def requeue_runs_of(
    database: Database, definitions: Definitions, clock: Clock, owner: str, why: str
) -> TickReport:
    """End every active run leased to ``owner`` as WORKER_LOST and retry its slot.

    For a daemon's own runs (on a clean stop): no lease check.
    """
    report = TickReport()
    while True:
        async with database.read() as session:
            run_ids = (await ExecutionRepository(session).runs_of_owner(owner))[:TAKEOVER_BATCH]
        if not run_ids:
            return report
        now = clock()
        ends = [RunFinished(r, now, Outcome.WORKER_LOST, why) for r in run_ids]
        async with database.write() as session:
            outcomes = await ExecutionRepository(session).record_results(
                owner, now, ends=ends, retry_rules=retry_rules(definitions), skip_locked=True
            )
        report.lost += len(outcomes.written)
        report.retried += outcomes.retried
        if not outcomes.written:
            return report
