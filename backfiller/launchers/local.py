"""The local launcher: a pool of persistent worker processes on this machine.

Each worker runs one task at a time; tasks wait in the launcher's own backlog (still QUEUED in
the database) until a worker is free, so a slow run never holds faster ones behind it. A
dispatcher thread moves tasks to idle workers as soon as they report, independently of the
daemon's database work, and watches the workers: a run past its timeout or canceled gets
SIGTERM, then SIGKILL after ``grace_seconds`` (sent to the worker's process group, so the job's
child processes go too); a worker that dies is replaced and its run is reported ``WORKER_LOST``.

When the daemon's gate is a :class:`~backfiller.launchers.base.WorkerGate` (the daemon's is),
each worker asks it itself, right before the job runs, on a database connection of its own: the
dispatcher only sends, so the gate's read costs the daemon's process nothing and the workers
make theirs in parallel. A worker's pipe then also holds the next few tasks while its run
ends (at most ``MAX_PREFETCH``, about ``PREFETCH_SECONDS`` of work, only for short runs): the
worker goes from one run to the next without waiting for this process to answer, and each
task still passes the gate at the moment it starts (a prefetched task that a pause or cancel
reaches ends ``NOT_STARTED``; a worker that dies takes back its prefetched tasks the same way,
without using the lost-worker budget). With a plain gate, the dispatcher asks it right before
a run goes to a worker (outside its lock; see ``base``). The lease deadline given by
:meth:`LocalLauncher.extend_lease` is shared with the workers through shared memory, so they
stop at it even when this process is gone.
"""

from __future__ import annotations

import contextlib
import logging
import math
import multiprocessing
import os
import signal
import sys
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from multiprocessing.connection import Connection, wait
from multiprocessing.process import BaseProcess
from pathlib import Path
from typing import Any

from backfiller.launchers.base import (
    Gate,
    LauncherEvent,
    Outcome,
    RunFinished,
    RunLogs,
    RunStarted,
    RunTask,
    StartCheck,
    StartRequest,
    WorkerGate,
)
from backfiller.launchers.messages import (
    Done,
    Fatal,
    Gated,
    Logs,
    Ready,
    Started,
    Stop,
    WorkerMessage,
)
from backfiller.launchers.worker import (
    WorkerOptions,
    marker_path,
    read_result,
    result_path,
    run_worker,
)

logger = logging.getLogger("backfiller.launcher")

TICK_SECONDS = 0.05
BACKLOG_SECONDS = 0.25
MAX_BACKLOG_PER_WORKER = 64
PREFETCH_SECONDS = 0.02
MAX_PREFETCH = 16
MAX_RESPAWN_DELAY = 30.0
RESULTS_KEPT_SECONDS = 86_400.0


def _now() -> datetime:
    return datetime.now(UTC)


def default_worker_count() -> int:
    return max(1, os.cpu_count() or 1)


@dataclass
class _Worker:
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


class LocalLauncher:
    """A pool of ``workers`` persistent processes that run the jobs of ``definitions``.

    Args:
        definitions: the user's definitions as ``module:attribute`` (each worker imports it).
        workers: number of worker processes (default: the CPU count).
        max_active: at most this many runs handed over at once, running and waiting
            (default 64 per worker). Below it, the backlog adapts to the pace of runs.
        grace_seconds: time between SIGTERM and SIGKILL when a run is canceled or times out.
        api_url, token: given to runs so that ``context.client`` can reach the service.
        results_dir: where workers keep each run's end until the daemon has written it, so
            that the next daemon finds the results of runs that ended while this one was dead.
    """

    def __init__(
        self,
        definitions: str,
        workers: int | None = None,
        *,
        max_active: int | None = None,
        grace_seconds: float = 5.0,
        api_url: str | None = None,
        token: str | None = None,
        results_dir: str | None = None,
    ) -> None:
        self.size = workers or default_worker_count()
        self.max_active = max_active or self.size * MAX_BACKLOG_PER_WORKER
        self._mean_run_seconds: float | None = None
        self.grace_seconds = grace_seconds
        self.results_dir = Path(results_dir) if results_dir else None
        if self.results_dir is not None:
            self.results_dir.mkdir(parents=True, exist_ok=True)
            _sweep(self.results_dir)
        self.options = WorkerOptions(
            definitions=definitions,
            api_url=api_url,
            token=token,
            sys_path=tuple(sys.path),
            results_dir=str(self.results_dir) if self.results_dir else None,
        )
        self._context = multiprocessing.get_context("spawn")
        # The lease deadline (monotonic), shared with the workers: no run executes past it.
        self._deadline = self._context.Value("d", math.inf, lock=False)
        self._gate: Gate | None = None
        self._orphan_groups: list[tuple[int, float]] = []
        self._lock = threading.RLock()
        self._backlog: deque[RunTask] = deque()
        self._workers: list[_Worker | None] = [None] * self.size
        self._events: list[LauncherEvent] = []
        self._notify: Callable[[], None] | None = None
        self._wake_r, self._wake_w = os.pipe()
        os.set_blocking(self._wake_w, False)
        self._closing = False
        self._thread: threading.Thread | None = None
        self._failures = 0
        self._respawn_after = 0.0
        self.fatal_error: str | None = None

    # -- the daemon's side -----------------------------------------------------------------

    def start(self) -> LocalLauncher:
        with self._lock:
            for slot in range(self.size):
                self._spawn(slot)
        self._thread = threading.Thread(target=self._run, name="launcher", daemon=True)
        self._thread.start()
        return self

    def _target_active(self) -> int:
        """Runs worth holding: one per worker, plus a backlog that keeps the workers busy for
        about ``BACKLOG_SECONDS`` at the measured pace of runs (short runs: a deep backlog;
        long runs: one waiting per worker, so a new backfill is not stuck behind a queue)."""
        mean = self._mean_run_seconds
        if mean is None:
            per_worker = 1
        else:
            per_worker = max(1, min(MAX_BACKLOG_PER_WORKER, math.ceil(BACKLOG_SECONDS / mean)))
        return min(self.max_active, self.size * (1 + per_worker))

    @property
    def capacity(self) -> int:
        with self._lock:
            busy = sum(len(w.sent()) for w in self._workers if w is not None)
            return max(0, self._target_active() - len(self._backlog) - busy)

    def submit(self, tasks: Iterable[RunTask]) -> None:
        tasks = list(tasks)
        if self.results_dir is not None:
            for task in tasks:
                with contextlib.suppress(OSError):
                    marker_path(self.results_dir, task.run_id, "queued").touch()
        with self._lock:
            self._backlog.extend(tasks)
        self._wake()

    def _mark_started(self, run_id: int) -> None:
        """``queued`` -> ``started``, before the run goes to its worker (see durable_results)."""
        if self.results_dir is None:
            return
        queued = marker_path(self.results_dir, run_id, "queued")
        started = marker_path(self.results_dir, run_id, "started")
        try:
            os.replace(queued, started)
        except OSError:
            with contextlib.suppress(OSError):
                started.touch()

    def cancel(self, run_ids: Iterable[int]) -> None:
        wanted = set(run_ids)
        if not wanted:
            return
        with self._lock:
            kept: deque[RunTask] = deque()
            for task in self._backlog:
                if task.run_id in wanted:
                    self._events.append(
                        RunFinished(task.run_id, _now(), Outcome.CANCELED, "canceled")
                    )
                else:
                    kept.append(task)
            self._backlog = kept
            for w in self._workers:
                if w is None:
                    continue
                w.canceled.update(t.run_id for t in w.queued if t.run_id in wanted)
                if w.task is not None and w.task.run_id in wanted:
                    if w.gating:
                        w.terminating = Outcome.CANCELED  # never sent: see _dispatch
                    else:
                        self._terminate(w, Outcome.CANCELED)
        self._signal_events()
        self._wake()

    def poll(self) -> list[LauncherEvent]:
        with self._lock:
            events, self._events = self._events, []
        return events

    def active(self) -> dict[int, RunTask]:
        with self._lock:
            found = {t.run_id: t for t in self._backlog}
            for w in self._workers:
                if w is not None:
                    found.update((t.run_id, t) for t in w.sent())
            return found

    def set_notify(self, callback: Callable[[], None] | None) -> None:
        self._notify = callback

    def set_gate(self, gate: Gate | None) -> None:
        self._gate = gate

    def extend_lease(self, owner: str, stop_by: datetime) -> None:
        self._deadline.value = time.monotonic() + (stop_by - _now()).total_seconds()
        self._wake()

    def revoke_lease(self) -> list[RunTask]:
        with self._lock:
            self._deadline.value = -math.inf
            revoked = list(self._backlog)
            self._backlog.clear()
            for w in self._workers:
                if w is None or w.task is None:
                    continue
                revoked += w.sent()
                w.task = None
                w.queued.clear()
                w.terminating = Outcome.WORKER_LOST
                _signal(w.process, signal.SIGKILL)
            ids = {t.run_id for t in revoked}
            self._events = [e for e in self._events if e.run_id not in ids]
        return revoked

    def durable_results(self, owner: str, run_ids: Iterable[int]) -> list[LauncherEvent]:
        """Ends kept by workers of this results folder; ``NOT_STARTED`` for the runs a launcher
        of this folder held but never handed to a worker (a ``queued`` marker, no ``started``).
        A run this folder knows nothing of (another machine's) gets nothing. The folder is
        keyed by run, whatever daemon ran it: ``owner`` is not needed."""
        if self.results_dir is None:
            return []
        found: list[LauncherEvent] = []
        for run_id in run_ids:
            end = read_result(result_path(self.results_dir, run_id))
            if end is not None:
                found.append(end)
            elif (
                marker_path(self.results_dir, run_id, "queued").exists()
                and not marker_path(self.results_dir, run_id, "started").exists()
            ):
                found.append(
                    RunFinished(run_id, _now(), Outcome.NOT_STARTED, "taken back: never started")
                )
        return found

    def discard_results(self, owner: str, run_ids: Iterable[int]) -> None:
        if self.results_dir is None:
            return
        for run_id in run_ids:
            for path in (
                result_path(self.results_dir, run_id),
                marker_path(self.results_dir, run_id, "queued"),
                marker_path(self.results_dir, run_id, "started"),
            ):
                with contextlib.suppress(OSError):
                    path.unlink()

    def recorded(self, events: Sequence[LauncherEvent]) -> None:
        return None  # what it keeps is per run, and goes with discard_results

    def forget_owner(self, owner: str) -> None:
        return None  # kept per run, discarded as written (and swept after a day)

    def ready_workers(self) -> int:
        """Worker processes started and ready to take runs."""
        with self._lock:
            return sum(1 for w in self._workers if w is not None and w.name and not w.dead)

    def worker_pids(self) -> list[int]:
        with self._lock:
            return [w.process.pid for w in self._workers if w is not None and w.process.pid]

    def close(self, timeout: float = 10.0) -> list[LauncherEvent]:
        """Stop the workers; runs in flight are reported ``WORKER_LOST``."""
        with self._lock:
            self._closing = True
            lost: list[LauncherEvent] = [
                RunFinished(
                    t.run_id, _now(), Outcome.WORKER_LOST, "the daemon stopped", attempt=t.attempt
                )
                for t in self._backlog
            ]
            self._backlog.clear()
            for w in self._workers:
                if w is None:
                    continue
                if w.task is not None:
                    lost += [
                        RunFinished(
                            t.run_id,
                            _now(),
                            Outcome.WORKER_LOST,
                            "the daemon stopped",
                            attempt=t.attempt,
                        )
                        for t in w.sent()
                    ]
                    w.task = None
                    w.queued.clear()
                    _signal(w.process, signal.SIGTERM)
                else:
                    with contextlib.suppress(OSError):
                        w.conn.send(Stop())
        self._wake()
        if self._thread is not None:
            self._thread.join(timeout)
        deadline = time.monotonic() + timeout
        for w in list(self._workers):
            if w is None:
                continue
            w.process.join(max(0.0, deadline - time.monotonic()))
            if w.process.is_alive():
                _signal(w.process, signal.SIGKILL)
                w.process.join(1)
            w.conn.close()
        os.close(self._wake_r)
        os.close(self._wake_w)
        return lost

    # -- the dispatcher thread ------------------------------------------------------------------

    def _wake(self) -> None:
        with contextlib.suppress(BlockingIOError, OSError):
            os.write(self._wake_w, b"x")

    def _signal_events(self) -> None:
        callback = self._notify
        if callback is not None and self._events:
            callback()

    def _spawn(self, slot: int) -> None:
        parent, child = self._context.Pipe(duplex=True)
        process = self._context.Process(
            target=run_worker,
            args=(child, self.options, os.getpid(), self._deadline),
            name=f"backfiller-worker-{slot}",
            # Not daemonic, so that jobs may start processes of their own; close() stops it.
            daemon=False,
        )
        process.start()
        child.close()
        self._workers[slot] = _Worker(slot=slot, process=process, conn=parent)

    def _run(self) -> None:
        while True:
            with self._lock:
                if self._closing:
                    return
                waitables: list[Any] = [self._wake_r]
                for w in self._workers:
                    if w is not None and not w.dead:
                        waitables += [w.conn, w.process.sentinel]
            ready = wait(waitables, timeout=TICK_SECONDS)
            with self._lock:
                if self._closing:
                    return
                if self._wake_r in ready:
                    with contextlib.suppress(BlockingIOError):
                        os.read(self._wake_r, 4096)
                for w in self._workers:
                    if w is None or w.dead:
                        continue
                    if w.conn in ready or w.process.sentinel in ready:
                        self._read(w)
                    if w.process.sentinel in ready and not w.process.is_alive():
                        self._read(w)
                        self._buried(w)
                self._watch_deadlines()
                self._respawn_missing()
                gate = self._gate
                if isinstance(gate, WorkerGate):
                    self._feed(gate.check())
                    chosen = []
                else:
                    chosen = self._choose()
            if chosen:
                self._dispatch(chosen)
            self._signal_events()

    def _read(self, w: _Worker) -> None:
        while True:
            try:
                if not w.conn.poll():
                    return
                message = w.conn.recv()
            except (EOFError, OSError):
                return
            self._handle(w, message)

    def _handle(self, w: _Worker, message: WorkerMessage) -> None:
        match message:
            case Ready(name):
                w.name = name
                self._failures = 0
            case Started(run_id, at, attempt):
                if w.task is not None and w.task.run_id == run_id:
                    w.started, w.running = time.monotonic(), True  # its timeout counts from here
                    self._events.append(RunStarted(run_id, at, w.name or "", attempt))
                    if run_id in w.canceled:
                        self._terminate(w, Outcome.CANCELED)
            case Logs(run_id, lines):
                if w.task is not None and w.task.run_id == run_id:
                    self._events.append(RunLogs(run_id, lines))
            case Done(end, lines):
                if w.task is None or w.task.run_id != end.run_id or w.terminating is not None:
                    return
                if lines:
                    self._events.append(RunLogs(end.run_id, lines))
                took = time.monotonic() - w.started
                mean = self._mean_run_seconds
                self._mean_run_seconds = took if mean is None else 0.9 * mean + 0.1 * took
                if end.run_id in w.canceled and end.outcome is Outcome.NOT_STARTED:
                    end = replace(end, outcome=Outcome.CANCELED, error_message="canceled")
                w.canceled.discard(end.run_id)
                self._events.append(end)
                w.task = w.queued.popleft() if w.queued else None
                w.started, w.running = time.monotonic(), False
            case Fatal(text):
                self.fatal_error = text
                logger.error("worker cannot start: %s", text)

    def _buried(self, w: _Worker) -> None:
        w.dead = True
        if w.kill_at is not None and w.process.pid:
            # The job's children may outlive the worker: SIGKILL their group after the grace.
            self._orphan_groups.append((w.process.pid, w.kill_at))
        code = w.process.exitcode
        if w.name is None:
            self._failures += 1
            self._respawn_after = time.monotonic() + min(
                MAX_RESPAWN_DELAY, 0.5 * 2 ** min(self._failures, 6)
            )
        if w.task is not None:
            # A gated task whose start the worker never reported never ran its job (the start
            # is sent before the job is called, and the pipe was read to its end above).
            outcome = w.terminating or (Outcome.WORKER_LOST if w.running else Outcome.NOT_STARTED)
            if outcome is Outcome.TIMEOUT:
                message = f"timed out after {w.task.timeout_seconds:g} s"
            elif outcome is Outcome.CANCELED:
                message = "canceled"
            elif outcome is Outcome.NOT_STARTED:
                message = "its worker died before it started"
            else:
                how = f"signal {-code}" if code is not None and code < 0 else f"exit code {code}"
                message = f"the worker process died ({how})"
            self._events.append(
                RunFinished(w.task.run_id, _now(), outcome, message, None, w.name, w.task.attempt)
            )
            w.task = None
        for task in w.queued:  # prefetched, never started: back to their backfill
            canceled = task.run_id in w.canceled
            self._events.append(
                RunFinished(
                    task.run_id,
                    _now(),
                    Outcome.CANCELED if canceled else Outcome.NOT_STARTED,
                    "canceled" if canceled else "its worker died before it started",
                    None,
                    w.name,
                    task.attempt,
                )
            )
        w.queued.clear()
        w.conn.close()
        self._workers[w.slot] = None

    def _terminate(self, w: _Worker, outcome: Outcome) -> None:
        if w.terminating is not None:
            return
        w.terminating = outcome
        w.kill_at = time.monotonic() + self.grace_seconds
        _signal(w.process, signal.SIGTERM)

    def _watch_deadlines(self) -> None:
        now = time.monotonic()
        still = []
        for pgid, at in self._orphan_groups:
            if now >= at:
                _kill_group(pgid, signal.SIGKILL)
            else:
                still.append((pgid, at))
        self._orphan_groups = still
        lease_over = now >= self._deadline.value
        for w in self._workers:
            if w is None or w.dead:
                continue
            if w.kill_at is not None and now >= w.kill_at:
                _signal(w.process, signal.SIGKILL)
                w.kill_at = None
            task = w.task
            if task is not None and lease_over and not w.gating:
                # The workers kill themselves at the deadline; this is the belt to their braces.
                w.terminating = w.terminating or Outcome.WORKER_LOST
                _signal(w.process, signal.SIGKILL)
                continue
            if (
                task is not None
                and w.terminating is None
                and w.running
                and task.timeout_seconds is not None
                and now - w.started > task.timeout_seconds
            ):
                self._terminate(w, Outcome.TIMEOUT)

    def _respawn_missing(self) -> None:
        if time.monotonic() < self._respawn_after:
            return
        for slot, w in enumerate(self._workers):
            if w is None:
                self._spawn(slot)

    def _choose(self) -> list[_Worker]:
        """Pair idle workers with the backlog's next tasks (under the lock; not sent yet)."""
        if time.monotonic() >= self._deadline.value:
            return []
        chosen = []
        for w in self._workers:
            if not self._backlog:
                break
            if w is None or w.dead or w.name is None or w.task is not None or w.terminating:
                continue
            w.task = self._backlog.popleft()
            w.gating = True
            chosen.append(w)
        return chosen

    def _prefetch_depth(self) -> int:
        """Tasks a worker may hold at once: one, or for short runs enough to cover about
        ``PREFETCH_SECONDS`` (the time this process may take to answer a worker)."""
        mean = self._mean_run_seconds
        if mean is None or mean >= PREFETCH_SECONDS:
            return 1
        return min(MAX_PREFETCH, 1 + math.ceil(PREFETCH_SECONDS / max(mean, 1e-6)))

    def _feed(self, check: StartCheck | None) -> None:
        """With a worker gate (under the lock): send gated tasks, spread evenly, until each
        worker holds ``_prefetch_depth`` of them. No check (no run may start now): the tasks
        given to idle workers end NOT_STARTED, as with a plain gate that refuses them."""
        if check is None:
            for w in self._choose():
                self._send(w, set())
            return
        if time.monotonic() >= self._deadline.value:
            return
        ready = [
            w
            for w in self._workers
            if w is not None and not w.dead and w.name is not None and w.terminating is None
        ]
        for level in range(self._prefetch_depth()):
            for w in ready:
                if not self._backlog:
                    return
                if len(w.queued) + (w.task is not None) > level:
                    continue
                task = self._backlog.popleft()
                if w.task is None:
                    w.task, w.started, w.running = task, time.monotonic(), False
                else:
                    w.queued.append(task)
                with contextlib.suppress(OSError):  # a dying worker: its burial reports them
                    w.conn.send(Gated(task, check))

    def _dispatch(self, chosen: list[_Worker]) -> None:
        """With a plain gate: ask it (without the lock: it is a database round trip), then send."""
        gate = self._gate
        allowed: set[int] | None = None
        if gate is not None:
            requests = [
                StartRequest(w.task.run_id, w.task.attempt, _now(), w.name or "")
                for w in chosen
                if w.task is not None
            ]
            try:
                allowed = gate(requests)
            except Exception:
                logger.exception("the start gate failed; the runs are not started")
                allowed = set()
        with self._lock:
            for w in chosen:
                self._send(w, allowed)

    def _send(self, w: _Worker, allowed: set[int] | None) -> None:
        """Send ``w`` its task, let through by the gate (``allowed``; None: no gate), or
        report it not started."""
        task, w.gating = w.task, False
        if task is None:
            return
        canceled = w.terminating is Outcome.CANCELED
        refused = allowed is not None and task.run_id not in allowed
        if refused or canceled:
            w.task, w.terminating = None, None
            outcome = Outcome.CANCELED if canceled and not refused else Outcome.NOT_STARTED
            message = "canceled" if outcome is Outcome.CANCELED else "not started"
            self._events.append(
                RunFinished(task.run_id, _now(), outcome, message, None, None, task.attempt)
            )
            return
        w.started, w.running = time.monotonic(), True
        self._mark_started(task.run_id)
        self._events.append(RunStarted(task.run_id, _now(), w.name or "", task.attempt))
        try:
            w.conn.send(task)
        except OSError:
            return  # the worker is dying: its burial reports the run WORKER_LOST


def _sweep(folder: Path) -> None:
    """Delete results older than ``RESULTS_KEPT_SECONDS``: refused ones (a stale attempt) are
    never recorded, and a takeover happens within a lease, long before."""
    cutoff = time.time() - RESULTS_KEPT_SECONDS
    for path in folder.iterdir():
        with contextlib.suppress(OSError):
            if path.stat().st_mtime < cutoff:
                path.unlink()


def _kill_group(pgid: int, signum: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, signum)


def _signal(process: BaseProcess, signum: int) -> None:
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
