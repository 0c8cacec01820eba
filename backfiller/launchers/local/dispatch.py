"""The local launcher's dispatcher thread: tasks to idle workers, and watch over them.

It moves tasks from the backlog to idle workers as soon as they report, independently of the
daemon's database work, reads what the workers say (start, log lines, end), and watches them: a
run past its timeout or canceled gets SIGTERM, then SIGKILL after the grace (to the worker's
process group); a worker that dies is replaced and its run is reported.

With a :class:`~backfiller.launchers.base.WorkerGate` each worker asks the gate itself right
before the job runs, and a worker's pipe holds its next few tasks (prefetch, for short runs).
With a plain gate the dispatcher asks it before a run goes to a worker (without the lock).
"""

from __future__ import annotations

import contextlib
import logging
import math
import os
import signal
import time
from collections.abc import Callable
from dataclasses import replace
from multiprocessing.connection import wait
from multiprocessing.context import ForkServerContext
from typing import Any

from backfiller.clock import utc_now
from backfiller.launchers.base import (
    Outcome,
    RunFinished,
    RunLogs,
    RunStarted,
    StartCheck,
    StartRequest,
    WorkerGate,
)
from backfiller.launchers.local.folder import ResultsFolder
from backfiller.launchers.local.pool import (
    PoolState,
    PoolWorker,
    bury,
    kill_orphans,
    signal_worker,
    spawn,
    terminate,
)
from backfiller.launchers.messages import Done, Fatal, Gated, Logs, Ready, Started, WorkerMessage
from backfiller.launchers.worker import WorkerOptions

logger = logging.getLogger("backfiller.launcher")

TICK_SECONDS = 0.05
PREFETCH_SECONDS = 0.02
MAX_PREFETCH = 16


class Dispatcher:
    """The dispatcher thread's work over the pool's shared state."""

    def __init__(
        self,
        state: PoolState,
        context: ForkServerContext,
        options: WorkerOptions,
        folder: ResultsFolder | None,
    ) -> None:
        self.state = state
        self.context = context
        self.options = options
        self.folder = folder
        self.notify: Callable[[], None] | None = None
        self.closing = False
        self._wake_r, self._wake_w = os.pipe()
        os.set_blocking(self._wake_w, False)

    def spawn(self, slot: int) -> None:
        self.state.workers[slot] = spawn(self.context, slot, self.options, self.state)

    def wake(self) -> None:
        with contextlib.suppress(BlockingIOError, OSError):
            os.write(self._wake_w, b"x")

    def signal_events(self) -> None:
        callback = self.notify
        if callback is not None and self.state.events:
            callback()

    def close(self) -> None:
        os.close(self._wake_r)
        os.close(self._wake_w)

    def run(self) -> None:
        """The thread's loop, until the launcher closes."""
        state = self.state
        while True:
            with state.lock:
                if self.closing:
                    return
                waitables: list[Any] = [self._wake_r]
                for w in state.live():
                    waitables += [w.conn, w.process.sentinel]
            ready = wait(waitables, timeout=TICK_SECONDS)
            with state.lock:
                if self.closing:
                    return
                chosen = self._pass(ready)
            if chosen:
                self._dispatch(chosen)
            self.signal_events()

    def _pass(self, ready: list[Any]) -> list[PoolWorker]:
        """One pass under the lock: read the workers, watch them, hand out tasks."""
        if self._wake_r in ready:
            with contextlib.suppress(BlockingIOError):
                os.read(self._wake_r, 4096)
        for w in self.state.live():
            if w.conn in ready or w.process.sentinel in ready:
                self._read(w)
            if w.process.sentinel in ready and not w.process.is_alive():
                self._read(w)
                bury(self.state, w)
        self._watch_deadlines()
        self._respawn_missing()
        gate = self.state.gate
        if isinstance(gate, WorkerGate):
            self._feed(gate.check())
            return []
        return self._choose()

    def _read(self, w: PoolWorker) -> None:
        while True:
            try:
                if not w.conn.poll():
                    return
                message = w.conn.recv()
            except (EOFError, OSError):
                return
            self._handle(w, message)

    def _handle(self, w: PoolWorker, message: WorkerMessage) -> None:
        events = self.state.events
        match message:
            case Ready(name):
                w.name = name
                self.state.failures = 0
            case Started(run_id, at, attempt):
                if w.task is not None and w.task.run_id == run_id:
                    w.started, w.running = time.monotonic(), True  # its timeout counts from here
                    events.append(RunStarted(run_id, at, w.name or "", attempt))
                    if run_id in w.canceled:
                        terminate(self.state, w, Outcome.CANCELED)
            case Logs(run_id, lines):
                if w.task is not None and w.task.run_id == run_id:
                    events.append(RunLogs(run_id, lines))
            case Done(end, lines):
                self._done(w, end, lines)
            case Fatal(text):
                self.state.fatal_error = text
                logger.error("worker cannot start: %s", text)

    def _done(self, w: PoolWorker, end: RunFinished, lines: tuple[Any, ...]) -> None:
        if w.task is None or w.task.run_id != end.run_id or w.terminating is not None:
            return
        if lines:
            self.state.events.append(RunLogs(end.run_id, lines))
        self.state.observe_run(time.monotonic() - w.started)
        if end.run_id in w.canceled and end.outcome is Outcome.NOT_STARTED:
            end = replace(end, outcome=Outcome.CANCELED, error_message="canceled")
        w.canceled.discard(end.run_id)
        self.state.events.append(end)
        w.task = w.queued.popleft() if w.queued else None
        w.started, w.running = time.monotonic(), False

    def _watch_deadlines(self) -> None:
        now = time.monotonic()
        kill_orphans(self.state, now)
        lease_over = self.state.lease_over()
        for w in self.state.live():
            if w.kill_at is not None and now >= w.kill_at:
                signal_worker(w.process, signal.SIGKILL)
                w.kill_at = None
            task = w.task
            if task is not None and lease_over and not w.gating:
                # The workers kill themselves at the deadline; this is the belt to their braces.
                w.terminating = w.terminating or Outcome.WORKER_LOST
                signal_worker(w.process, signal.SIGKILL)
                continue
            if (
                task is not None
                and w.terminating is None
                and w.running
                and task.timeout_seconds is not None
                and now - w.started > task.timeout_seconds
            ):
                terminate(self.state, w, Outcome.TIMEOUT)

    def _respawn_missing(self) -> None:
        if time.monotonic() < self.state.respawn_after:
            return
        for slot, w in enumerate(self.state.workers):
            if w is None:
                self.spawn(slot)

    def _choose(self) -> list[PoolWorker]:
        """Pair idle workers with the backlog's next tasks (under the lock; not sent yet)."""
        state = self.state
        if state.lease_over():
            return []
        chosen = []
        for w in state.live():
            if not state.backlog:
                break
            if w.name is None or w.task is not None or w.terminating:
                continue
            w.task = state.backlog.popleft()
            w.gating = True
            chosen.append(w)
        return chosen

    def _prefetch_depth(self) -> int:
        """Tasks a worker may hold at once: one, or for short runs enough to cover about
        ``PREFETCH_SECONDS`` (the time this process may take to answer a worker)."""
        mean = self.state.mean_run_seconds
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
        state = self.state
        if state.lease_over():
            return
        ready = [w for w in state.workers if w is not None and w.ready]
        for level in range(self._prefetch_depth()):
            for w in ready:
                if not state.backlog:
                    return
                if len(w.queued) + (w.task is not None) > level:
                    continue
                task = state.backlog.popleft()
                if w.task is None:
                    w.task, w.started, w.running = task, time.monotonic(), False
                else:
                    w.queued.append(task)
                with contextlib.suppress(OSError):  # a dying worker: its burial reports them
                    w.conn.send(Gated(task, check))

    def _dispatch(self, chosen: list[PoolWorker]) -> None:
        """With a plain gate: ask it (without the lock: it is a database round trip), then send."""
        gate = self.state.gate
        allowed: set[int] | None = None
        if gate is not None:
            requests = [
                StartRequest(
                    w.task.run_id, w.task.attempt, utc_now(), w.name or "", w.task.backfill_id
                )
                for w in chosen
                if w.task is not None
            ]
            try:
                allowed = gate(requests)
            except Exception:
                logger.exception("the start gate failed; the runs are not started")
                allowed = set()
        with self.state.lock:
            for w in chosen:
                self._send(w, allowed)

    def _send(self, w: PoolWorker, allowed: set[int] | None) -> None:
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
            self.state.events.append(
                RunFinished(task.run_id, utc_now(), outcome, message, None, None, task.attempt)
            )
            return
        w.started, w.running = time.monotonic(), True
        if self.folder is not None:
            self.folder.mark_started(task.run_id)
        self.state.events.append(RunStarted(task.run_id, utc_now(), w.name or "", task.attempt))
        try:
            w.conn.send(task)
        except OSError:
            return  # the worker is dying: its burial reports the run WORKER_LOST
