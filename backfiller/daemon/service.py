"""The daemon: its ticks registered on a :class:`~backfiller.daemon.loop.Loop`, and a clean stop."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

from backfiller.clock import utc_now
from backfiller.config import HistorySettings
from backfiller.daemon import retention, ticks
from backfiller.daemon.lease import keep_lease, lose_lease, take_over_expired
from backfiller.daemon.loop import Loop
from backfiller.daemon.retention import Retention
from backfiller.daemon.ticks import DaemonState, Limits, TickReport
from backfiller.daemon.triggers import TICK_SECONDS, TriggerRunner
from backfiller.definitions.loading import Definitions
from backfiller.domain import Outcome
from backfiller.launchers.base import (
    Launcher,
    LauncherEvent,
    RunFinished,
    RunLogs,
    RunStarted,
    StartCheck,
    StartRequest,
    Warming,
)
from backfiller.observability import daemon_metrics
from backfiller.storage import Database
from backfiller.storage.execution import ExecutionRepository, StartGate
from backfiller.storage.launch_watch import watch_launches

logger = logging.getLogger("backfiller.daemon")

WARM_UP_SECONDS = 30.0
"""At most this long, a starting daemon waits for its launcher's workers (see ``warm_up``)."""
WARM_UP_POLL_SECONDS = 0.02


@dataclass(frozen=True)
class DaemonSettings:
    """How one daemon behaves.

    Args:
        max_runs: runs this daemon keeps active at once (default: the launcher's capacity).
        team_max_runs: runs of one team in flight at once across daemons, for a team without
            a limit of its own (``setTeamLimit``); None: no limit.
        plan_window: slots materialized ahead of launching, per backfill.
        lease_timeout_seconds: the lease's length: a daemon that could not renew it for this
            long has stopped its runs (at 80% of it) and is taken over by another daemon.
        heartbeat_seconds: how often the lease (and running runs' heartbeats) are renewed;
            well below ``lease_timeout_seconds`` (a tenth or less).
        plan_seconds: how often backfills are planned; a launch seen by the launch watch
            (``storage.launch_watch``) is planned at once instead.
        shutdown_grace_seconds: on stop, how long runs in flight may finish before their
            workers are stopped and the runs are requeued.
    """

    max_runs: int | None = None
    team_max_runs: int | None = None
    plan_window: int = ticks.PLAN_WINDOW
    lease_timeout_seconds: float = 30.0
    heartbeat_seconds: float = 2.0
    plan_seconds: float = 0.25
    steer_seconds: float = 0.5
    shutdown_grace_seconds: float = 10.0


class Daemon:
    def __init__(
        self,
        database: Database,
        definitions: Definitions,
        launcher: Launcher,
        settings: DaemonSettings | None = None,
        clock: Callable[[], datetime] = utc_now,
        api_url: str | None = None,
        history: HistorySettings | None = None,
    ) -> None:
        """``history``: how long history is kept (default: the environment's,
        ``HistorySettings.from_env``)."""
        self.database = database
        self.definitions = definitions
        self.launcher = launcher
        self.settings = settings or DaemonSettings()
        self.clock = clock
        self.state = DaemonState(
            limits=Limits(
                max_runs=self.settings.max_runs, team_max_runs=self.settings.team_max_runs
            ),
            plan_window=self.settings.plan_window,
            lease_timeout=timedelta(seconds=self.settings.lease_timeout_seconds),
        )
        self.totals = TickReport()
        self._unwritten: list[LauncherEvent] = []
        self._claiming = True
        self._failing_lease = False
        self.start_gate = StartGate(database.url)
        s = self.settings
        self.loop = Loop()
        # The lease comes first, and is retried fast: after an outage it is renewed before
        # anything else, and the other tasks are retried at once (see ``lease``).
        self.loop.every(s.heartbeat_seconds, "lease", self.lease, max_backoff=0.5)
        self.loop.every(0, "results", self.write_results)
        self.loop.every(s.plan_seconds, "plan", self.plan)
        self.loop.every(0, "launch", self.launch)
        self.loop.every(s.steer_seconds, "steer", self.steer)
        self.loop.every(s.steer_seconds, "complete", self.complete)
        self.loop.every(
            TICK_SECONDS,
            "triggers",
            TriggerRunner(database, definitions, clock, api_url=api_url).tick,
        )
        self.loop.every(
            retention.EVERY_SECONDS, "retention", Retention(database, clock, history).tick
        )

    @property
    def owner(self) -> str:
        return self.state.owner

    def _count(self, report: TickReport) -> TickReport:
        self.totals = self.totals + report
        daemon_metrics.observe_report(report)
        return report

    async def write_results(self) -> TickReport:
        batch = self._unwritten + self.launcher.poll()
        self._unwritten = []
        if not batch:
            return TickReport()
        daemon_metrics.observe_runs(
            [(e.run_id, e.at) for e in batch if isinstance(e, RunStarted)],
            [e for e in batch if isinstance(e, RunFinished)],
        )
        try:
            report = await ticks.record_results(
                self.database, self.definitions, self.clock, self.launcher, self.state, batch
            )
        except BaseException:
            self._unwritten = batch + self._unwritten
            raise
        return self._count(report)

    async def plan(self) -> TickReport:
        return self._count(
            await ticks.plan_backfills(self.database, self.definitions, self.clock, self.state)
        )

    async def launch(self) -> TickReport:
        if not self._claiming:
            return TickReport()
        return self._count(
            await ticks.launch_runs(
                self.database, self.definitions, self.clock, self.launcher, self.state
            )
        )

    async def steer(self) -> TickReport:
        return self._count(
            await ticks.steer_backfills(self.database, self.clock, self.launcher, self.state)
        )

    async def complete(self) -> TickReport:
        return self._count(await ticks.complete_backfills(self.database, self.clock))

    def _gate(self, requests: Sequence[StartRequest]) -> set[int]:
        """The launcher's start gate, called from its thread (see ``storage.execution.starts``).

        Refuses everything once the daemon is stopping: runs in flight may finish, none starts.
        """
        if not self._claiming:
            return set()
        return self.start_gate.start(
            self.state.owner,
            [(r.run_id, r.attempt, r.backfill_id) for r in requests],
            self.clock(),
        )

    def _start_check(self) -> StartCheck | None:
        """What the local pool's workers ask the database themselves (see ``_DaemonGate``)."""
        if not self._claiming:
            return None
        return StartCheck(self.start_gate.url, self.state.owner)

    async def lease(self) -> TickReport:
        """Renew the lease first; take over expired daemons' runs; requeue lost runs."""
        owner = self.state.owner
        try:
            await keep_lease(self.database, self.clock, self.state, self.launcher)
        except Exception:
            stop_by = self.state.stop_by
            if stop_by is not None and self.clock() >= stop_by:
                lose_lease(self.state, self.launcher, "the database was away until it ran out")
                self._unwritten = []  # kept by the workers: the takeover records them
            self._failing_lease = True
            raise
        if self.state.owner != owner:
            self._unwritten = []  # results of the old name: its takeover records them
        if self._failing_lease:
            self._failing_lease = False
            self.loop.retry_all_now()
        report = await take_over_expired(
            self.database, self.definitions, self.clock, self.state, self.launcher
        )
        report += await self._requeue_orphans()
        return self._count(report)

    async def _requeue_orphans(self) -> TickReport:
        """Runs leased to this daemon that its launcher does not know: requeue them."""
        known = set(self.launcher.active())
        self._unwritten += self.launcher.poll()
        known |= {e.run_id for e in self._unwritten}
        async with self.database.read() as session:
            mine = await ExecutionRepository(session).runs_of_owner(self.owner)
        orphans = [r for r in mine if r not in known]
        if not orphans:
            return TickReport()
        logger.warning("requeueing %d runs this daemon lost track of", len(orphans))
        now = self.clock()
        ends = [RunFinished(r, now, Outcome.WORKER_LOST, "lost track of the run") for r in orphans]
        async with self.database.write() as session:
            outcomes = await ExecutionRepository(session).record_results(
                self.owner, now, ends=ends, retry_rules=ticks.retry_rules(self.definitions)
            )
        return TickReport(lost=len(outcomes.written), retried=outcomes.retried)

    async def run(self, stop: asyncio.Event) -> None:
        """Run until ``stop`` is set, then stop cleanly (see :meth:`shutdown`)."""
        self.state.started_at = self.clock()
        self.launcher.set_notify(self.loop.wake)
        self.launcher.set_gate(_DaemonGate(self))
        logger.info("daemon %s started", self.owner)
        watch = asyncio.create_task(
            watch_launches(self.database, lambda: self.loop.run_soon("plan"))
        )
        try:
            await self.warm_up(stop)
            await self.lease()
            await self.loop.run(stop)
        finally:
            watch.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await watch
            await self.shutdown()

    async def warm_up(self, stop: asyncio.Event) -> None:
        """Pay at start what the first backfill would otherwise wait for: the launcher's
        workers started (a :class:`~backfiller.launchers.base.Warming` launcher; at most
        ``WARM_UP_SECONDS``) and the daemon's first-use reads (``DaemonState.warm``). It comes
        before the lease and the loop's first pass, so a daemon that answers ``/readyz`` is warm.
        """
        launcher = self.launcher
        if isinstance(launcher, Warming):
            deadline = time.monotonic() + WARM_UP_SECONDS
            while launcher.warming() and time.monotonic() < deadline:
                if stop.is_set():  # (the workers' state is a thread's: it is polled)
                    break
                await asyncio.sleep(WARM_UP_POLL_SECONDS)
        try:
            await self.state.warm(self.database)
        except Exception:
            logger.debug("warm-up read failed; the first claim reads it", exc_info=True)

    async def shutdown(self) -> None:
        """Stop claiming; let runs in flight finish for a grace period; requeue the rest."""
        self._claiming = False
        deadline = time.monotonic() + self.settings.shutdown_grace_seconds
        try:
            while self.launcher.active() and time.monotonic() < deadline:
                await self.write_results()
                await self.steer()
                await asyncio.sleep(0.05)
            await self.write_results()
        except Exception:
            logger.exception("could not write the last results")
        leftovers = self.launcher.close(timeout=self.settings.shutdown_grace_seconds)
        events: list[LauncherEvent] = [
            e for e in self._unwritten if isinstance(e, RunStarted | RunLogs)
        ]
        events += [e for e in self._unwritten if isinstance(e, RunFinished)]
        del leftovers  # requeued below, as lost with the daemon (no retry budget used)
        try:
            if events:
                await ticks.record_results(
                    self.database, self.definitions, self.clock, self.launcher, self.state, events
                )
            await ticks.requeue_runs_of(
                self.database, self.definitions, self.clock, self.owner, "the daemon stopped"
            )
            async with self.database.write() as session:
                await ExecutionRepository(session).drop_lease(self.owner)
        except Exception:
            logger.exception("could not requeue this daemon's runs; another daemon will")
        self.start_gate.dispose()
        logger.info("daemon %s stopped", self.owner)


class _DaemonGate:
    """The daemon's start gate as a launcher sees it: asked by the launcher (``__call__``),
    or by the workers themselves with :meth:`check` (a ``launchers.base.WorkerGate``)."""

    def __init__(self, daemon: Daemon) -> None:
        self.daemon = daemon

    def __call__(self, requests: Sequence[StartRequest], /) -> set[int]:
        return self.daemon._gate(requests)

    def check(self) -> StartCheck | None:
        return self.daemon._start_check()
