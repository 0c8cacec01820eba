"""The local launcher's worker processes: their state, how they start, how they are signaled,
and what becomes of their runs when one dies.

Each worker leads its own process group (it calls ``setsid`` first thing), which its job's
child processes join: a signal to the group reaches the job and its children, nothing else.
"""

from __future__ import annotations

import contextlib
import math
import os
import signal
import threading
import time
from collections import deque
from dataclasses import dataclass, field
from multiprocessing.connection import Connection
from multiprocessing.context import ForkServerContext
from multiprocessing.process import BaseProcess

from backfiller.clock import utc_now
from backfiller.launchers.base import Gate, LauncherEvent, Outcome, RunFinished, RunTask
from backfiller.launchers.worker import SharedDeadline, WorkerOptions, run_worker

MAX_RESPAWN_DELAY = 30.0
GIVEN_BACK = "its worker died before it started"


@dataclass
class PoolWorker:
    slot: int
    process: BaseProcess
    conn: Connection
    name: str | None = None
    task: RunTask | None = None
    started: float = 0.0
    running: bool = False
    """The job runs (a gated task: once its worker said it passed the gate); its timeout counts."""
    terminating: Outcome | None = None
    kill_at: float | None = None
    dead: bool = False
    gating: bool = False
    """The worker's task is being asked of the gate (not sent yet)."""
    queued: deque[RunTask] = field(default_factory=deque)
    """Gated tasks sent after ``task`` (prefetched): the worker runs them in order."""
    canceled: set[int] = field(default_factory=set)
    """Prefetched tasks canceled here: stopped if their gate lets them start anyway."""

    def sent(self) -> list[RunTask]:
        """Every task this worker holds: its current one, then the prefetched ones."""
        return ([self.task] if self.task is not None else []) + list(self.queued)

    @property
    def ready(self) -> bool:
        """Started, ready for runs, and not being stopped."""
        return not self.dead and self.name is not None and self.terminating is None


@dataclass
class PoolState:
    """What the launcher's two sides (the daemon's calls and the dispatcher thread) share,
    under ``lock``."""

    size: int
    grace_seconds: float
    deadline: SharedDeadline
    """The lease deadline (monotonic), shared with the workers: no run executes past it."""
    workers: list[PoolWorker | None]
    lifeline: Connection
    """The read end of a pipe whose write end only this process holds and never writes to:
    each worker watches it, and its end (EOF) says that the daemon is gone."""
    lock: threading.RLock = field(default_factory=threading.RLock)
    backlog: deque[RunTask] = field(default_factory=deque)
    events: list[LauncherEvent] = field(default_factory=list)
    gate: Gate | None = None
    mean_run_seconds: float | None = None
    orphan_groups: list[tuple[int, float]] = field(default_factory=list)
    """Process groups of dead workers to SIGKILL at a time (their jobs' children)."""
    failures: int = 0
    respawn_after: float = 0.0
    fatal_error: str | None = None

    def live(self) -> list[PoolWorker]:
        return [w for w in self.workers if w is not None and not w.dead]

    def observe_run(self, took: float) -> None:
        mean = self.mean_run_seconds
        self.mean_run_seconds = took if mean is None else 0.9 * mean + 0.1 * took

    def lease_over(self) -> bool:
        return time.monotonic() >= self.deadline.value

    def revoke(self) -> list[RunTask]:
        """Forget every run and SIGKILL the workers that hold one (the lease is lost)."""
        self.deadline.value = -math.inf
        revoked = list(self.backlog)
        self.backlog.clear()
        for w in self.workers:
            if w is None or w.task is None:
                continue
            revoked += w.sent()
            w.task = None
            w.queued.clear()
            w.terminating = Outcome.WORKER_LOST
            signal_worker(w.process, signal.SIGKILL)
        ids = {t.run_id for t in revoked}
        self.events = [e for e in self.events if e.run_id not in ids]
        return revoked


def spawn(
    context: ForkServerContext, slot: int, options: WorkerOptions, state: PoolState
) -> PoolWorker:
    parent, child = context.Pipe(duplex=True)
    process = context.Process(
        target=run_worker,
        args=(child, options, state.lifeline, state.deadline),
        name=f"backfiller-worker-{slot}",
        # Not daemonic, so that jobs may start processes of their own; close() stops it.
        daemon=False,
    )
    process.start()
    child.close()
    return PoolWorker(slot=slot, process=process, conn=parent)


def bury(state: PoolState, w: PoolWorker) -> None:
    """A worker process died: report its runs, and plan its replacement (under the lock)."""
    w.dead = True
    if w.kill_at is not None and w.process.pid:
        # The job's children may outlive the worker: SIGKILL their group after the grace.
        state.orphan_groups.append((w.process.pid, w.kill_at))
    if w.name is None:
        state.failures += 1
        state.respawn_after = time.monotonic() + min(
            MAX_RESPAWN_DELAY, 0.5 * 2 ** min(state.failures, 6)
        )
    if w.task is not None:
        state.events.append(_end_of_current(w, w.task))
        w.task = None
    for task in w.queued:  # prefetched, never started: back to their backfill
        canceled = task.run_id in w.canceled
        state.events.append(
            RunFinished(
                task.run_id,
                utc_now(),
                Outcome.CANCELED if canceled else Outcome.NOT_STARTED,
                "canceled" if canceled else GIVEN_BACK,
                None,
                w.name,
                task.attempt,
            )
        )
    w.queued.clear()
    w.conn.close()
    state.workers[w.slot] = None


def _end_of_current(w: PoolWorker, task: RunTask) -> RunFinished:
    """How the run a dead worker held ended. A gated task whose start the worker never
    reported never ran its job (the start is sent before the job is called, and the pipe was
    read to its end before the burial)."""
    outcome = w.terminating or (Outcome.WORKER_LOST if w.running else Outcome.NOT_STARTED)
    if outcome is Outcome.TIMEOUT:
        message = f"timed out after {task.timeout_seconds:g} s"
    elif outcome is Outcome.CANCELED:
        message = "canceled"
    elif outcome is Outcome.NOT_STARTED:
        message = GIVEN_BACK
    else:
        code = w.process.exitcode
        how = f"signal {-code}" if code is not None and code < 0 else f"exit code {code}"
        message = f"the worker process died ({how})"
    return RunFinished(task.run_id, utc_now(), outcome, message, None, w.name, task.attempt)


def kill_orphans(state: PoolState, now: float) -> None:
    """SIGKILL the process groups of dead workers whose grace has passed."""
    still = []
    for pgid, at in state.orphan_groups:
        if now >= at:
            kill_group(pgid, signal.SIGKILL)
        else:
            still.append((pgid, at))
    state.orphan_groups = still


def kill_group(pgid: int, signum: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, signum)


def signal_worker(process: BaseProcess, signum: int) -> None:
    """Signal a worker's process group (the worker leads it; its job's children are in it)."""
    pid = process.pid
    if pid is None:
        return
    try:
        os.killpg(pid, signum)
    except (ProcessLookupError, PermissionError):
        # Not a group leader yet (it calls setsid first thing): signal the process itself.
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signum)


def terminate(state: PoolState, w: PoolWorker, outcome: Outcome) -> None:
    """SIGTERM the worker's group now, SIGKILL after the grace (cancel, timeout)."""
    if w.terminating is not None:
        return
    w.terminating = outcome
    w.kill_at = time.monotonic() + state.grace_seconds
    signal_worker(w.process, signal.SIGTERM)
