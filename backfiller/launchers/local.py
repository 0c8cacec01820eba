"""The local launcher: a pool of persistent worker processes on this machine.

Each worker runs one task at a time; tasks wait in the launcher's own backlog (still QUEUED in
the database) until a worker is free, so a slow run never holds faster ones behind it. A
dispatcher thread moves tasks to idle workers as soon as they report, independently of the
daemon's database work, and watches the workers: a run past its timeout or canceled gets
SIGTERM, then SIGKILL after ``grace_seconds``; a worker that dies is replaced and its run is
reported ``WORKER_LOST``.
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
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from multiprocessing.connection import Connection, wait
from multiprocessing.process import BaseProcess
from typing import Any

from backfiller.launchers.base import (
    LauncherEvent,
    LogLine,
    Outcome,
    RunFinished,
    RunLogs,
    RunStarted,
    RunTask,
)
from backfiller.launchers.worker import WorkerOptions, run_worker

logger = logging.getLogger("backfiller.launcher")

TICK_SECONDS = 0.05
BACKLOG_SECONDS = 0.25
MAX_BACKLOG_PER_WORKER = 64
MAX_RESPAWN_DELAY = 30.0


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
    terminating: Outcome | None = None
    kill_at: float | None = None
    dead: bool = False
    pending_lines: list[LogLine] = field(default_factory=list)


class LocalLauncher:
    """A pool of ``workers`` persistent processes that run the jobs of ``definitions``.

    Args:
        definitions: the user's definitions as ``module:attribute`` (each worker imports it).
        workers: number of worker processes (default: the CPU count).
        max_active: at most this many runs handed over at once, running and waiting
            (default 64 per worker). Below it, the backlog adapts to the pace of runs.
        grace_seconds: time between SIGTERM and SIGKILL when a run is canceled or times out.
        api_url, token: given to runs so that ``context.client`` can reach the service.
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
    ) -> None:
        self.size = workers or default_worker_count()
        self.max_active = max_active or self.size * MAX_BACKLOG_PER_WORKER
        self._mean_run_seconds: float | None = None
        self.grace_seconds = grace_seconds
        self.options = WorkerOptions(
            definitions=definitions, api_url=api_url, token=token, sys_path=tuple(sys.path)
        )
        self._context = multiprocessing.get_context("spawn")
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
            busy = sum(1 for w in self._workers if w is not None and w.task is not None)
            return max(0, self._target_active() - len(self._backlog) - busy)

    def submit(self, tasks: Iterable[RunTask]) -> None:
        with self._lock:
            self._backlog.extend(tasks)
        self._wake()

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
                if w is not None and w.task is not None and w.task.run_id in wanted:
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
                if w is not None and w.task is not None:
                    found[w.task.run_id] = w.task
            return found

    def set_notify(self, callback: Callable[[], None] | None) -> None:
        self._notify = callback

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
                RunFinished(t.run_id, _now(), Outcome.WORKER_LOST, "the daemon stopped")
                for t in self._backlog
            ]
            self._backlog.clear()
            for w in self._workers:
                if w is None:
                    continue
                if w.task is not None:
                    lost.append(
                        RunFinished(
                            w.task.run_id, _now(), Outcome.WORKER_LOST, "the daemon stopped"
                        )
                    )
                    w.task = None
                    _signal(w.process, signal.SIGTERM)
                else:
                    with contextlib.suppress(OSError):
                        w.conn.send(None)
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
            args=(child, self.options, os.getpid()),
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
                self._dispatch()
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

    def _handle(self, w: _Worker, message: tuple[Any, ...]) -> None:
        kind = message[0]
        if kind == "ready":
            w.name = str(message[1])
            self._failures = 0
        elif kind == "log":
            run_id, lines = message[1], message[2]
            self._events.append(RunLogs(run_id, tuple(LogLine(*line) for line in lines)))
        elif kind == "done":
            run_id, outcome, error, trace, lines = message[1:6]
            if lines:
                self._events.append(RunLogs(run_id, tuple(LogLine(*line) for line in lines)))
            if w.task is not None and w.task.run_id == run_id and w.terminating is None:
                took = time.monotonic() - w.started
                mean = self._mean_run_seconds
                self._mean_run_seconds = took if mean is None else 0.9 * mean + 0.1 * took
                self._events.append(
                    RunFinished(run_id, _now(), Outcome(outcome), error, trace, w.name)
                )
                w.task = None
        elif kind == "fatal":
            self.fatal_error = str(message[1])
            logger.error("worker cannot start: %s", message[1])

    def _buried(self, w: _Worker) -> None:
        w.dead = True
        code = w.process.exitcode
        if w.name is None:
            self._failures += 1
            self._respawn_after = time.monotonic() + min(
                MAX_RESPAWN_DELAY, 0.5 * 2 ** min(self._failures, 6)
            )
        if w.task is not None:
            outcome = w.terminating or Outcome.WORKER_LOST
            if outcome is Outcome.TIMEOUT:
                message = f"timed out after {w.task.timeout_seconds:g} s"
            elif outcome is Outcome.CANCELED:
                message = "canceled"
            else:
                how = f"signal {-code}" if code is not None and code < 0 else f"exit code {code}"
                message = f"the worker process died ({how})"
            self._events.append(RunFinished(w.task.run_id, _now(), outcome, message, None, w.name))
            w.task = None
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
        for w in self._workers:
            if w is None or w.dead:
                continue
            if w.kill_at is not None and now >= w.kill_at:
                _signal(w.process, signal.SIGKILL)
                w.kill_at = None
            task = w.task
            if (
                task is not None
                and w.terminating is None
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

    def _dispatch(self) -> None:
        for w in self._workers:
            if not self._backlog:
                return
            if w is None or w.dead or w.name is None or w.task is not None or w.terminating:
                continue
            task = self._backlog.popleft()
            try:
                w.conn.send(task)
            except OSError:
                self._backlog.appendleft(task)
                continue
            w.task = task
            w.started = time.monotonic()
            self._events.append(RunStarted(task.run_id, _now(), w.name))


def _signal(process: BaseProcess, signum: int) -> None:
    if process.pid is None:
        return
    with contextlib.suppress(ProcessLookupError):
        os.kill(process.pid, signum)
