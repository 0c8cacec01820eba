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
import math
import multiprocessing
import os
import signal
import sys
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable, Sequence
from datetime import datetime

from backfiller.clock import utc_now
from backfiller.launchers.base import Gate, LauncherEvent, Outcome, RunFinished, RunTask
from backfiller.launchers.local.dispatch import Dispatcher
from backfiller.launchers.local.folder import ResultsFolder
from backfiller.launchers.local.pool import PoolState, signal_worker, terminate
from backfiller.launchers.messages import Stop
from backfiller.launchers.worker import WorkerOptions

WORKER_PRELOAD = (
    "__main__",  # the daemon's script (``backfiller``), which each worker would import again
    "backfiller.launchers.worker",
    "backfiller.definitions.loading",
    "backfiller.definitions.jobs",
    "backfiller.observability.logs",
    "backfiller.observability.tracing",
    "backfiller.storage.engine",
    "backfiller.storage.execution.starts",
    "jsonschema",  # a job's config schema
)
"""What the workers' fork server imports once, before it forks each worker, so that a worker
starts in about 0.1 s of CPU instead of 0.6 s (see :meth:`LocalLauncher.__init__`), with the
driver of the daemon's database (``storage.engine.driver_modules``: psycopg is not loaded
beside SQLite). Modules only, nothing that starts a thread or opens a connection; never
``prometheus_client``: a worker turns its metrics on before it imports it. The user's
definitions are not among them: each worker imports them itself, as before."""

BACKLOG_SECONDS = 0.25
MAX_BACKLOG_PER_WORKER = {"sqlite": 64, "postgresql": 512}
"""At most this many runs held per worker, by database. The backlog is bounded by time first
(about ``BACKLOG_SECONDS`` of runs at their measured pace); this bounds it for very short runs.
On PostgreSQL, where each of a pass's statements is a round trip and each commit a flush, a
deep backlog lets the daemon claim and record short runs in large batches: no-op runs dispatch
about 1.5 times as fast with 512 as with 64. On SQLite (statements are calls into a library)
larger batches gained nothing and lost about a tenth (docs/benchmarks.md)."""


def max_backlog_per_worker(database_url: str | None) -> int:
    """The most runs held per worker for the daemon's database (see
    :data:`MAX_BACKLOG_PER_WORKER`)."""
    from backfiller.storage.engine import backend_name

    return MAX_BACKLOG_PER_WORKER[backend_name(database_url)]


def default_worker_count() -> int:
    return max(1, os.cpu_count() or 1)


class LocalLauncher:
    """A pool of ``workers`` persistent processes that run the jobs of ``definitions``.

    Implements the core launcher protocol and the ``LeasedLauncher`` and ``DurableResults``
    capabilities (``launchers.base``).

    Args:
        definitions: the user's definitions as ``module:attribute`` (each worker imports it).
        workers: number of worker processes (default: the CPU count).
        max_active: at most this many runs handed over at once, running and waiting
            (default 64 per worker on SQLite, 512 on PostgreSQL). Below it, the backlog
            adapts to the pace of runs.
        grace_seconds: time between SIGTERM and SIGKILL when a run is canceled or times out.
        api_url, token: given to runs so that ``context.client`` can reach the service.
        results_dir: where workers keep each run's end until the daemon has written it, so
            that the next daemon finds the results of runs that ended while this one was dead.
        database_url: the daemon's database, which each worker connects to for its start
            gate before it says it is ready (else at its first run).
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
        database_url: str | None = None,
    ) -> None:
        self.size = workers or default_worker_count()
        self.per_worker = max_backlog_per_worker(database_url)
        self.max_active = max_active or self.size * self.per_worker
        self.grace_seconds = grace_seconds
        self.folder = ResultsFolder(results_dir) if results_dir else None
        self.results_dir = self.folder.path if self.folder is not None else None
        self.options = WorkerOptions(
            definitions=definitions,
            api_url=api_url,
            token=token,
            sys_path=tuple(sys.path),
            results_dir=str(self.results_dir) if self.results_dir else None,
            database_url=database_url,
        )
        # Workers are forked by a fork server that this process starts with the first worker
        # (a fresh interpreter, without this process's threads or connections) and that imports
        # WORKER_PRELOAD once: a worker, first or replacement, starts without paying the
        # imports a spawned one would. The server exits when this process does.
        context = multiprocessing.get_context("forkserver")
        from backfiller.storage.engine import driver_modules

        context.set_forkserver_preload([*WORKER_PRELOAD, *driver_modules(database_url)])
        lifeline, self._keep_alive = context.Pipe(duplex=False)
        self.state = PoolState(
            size=self.size,
            grace_seconds=grace_seconds,
            deadline=context.Value("d", math.inf, lock=False),
            workers=[None] * self.size,
            lifeline=lifeline,
        )
        self.dispatcher = Dispatcher(self.state, context, self.options, self.folder)
        self._thread: threading.Thread | None = None

    @property
    def fatal_error(self) -> str | None:
        """Why the workers cannot start (the definitions do not load), if they cannot."""
        return self.state.fatal_error

    def start(self) -> LocalLauncher:
        with self.state.lock:
            for slot in range(self.size):
                self.dispatcher.spawn(slot)
        self._thread = threading.Thread(target=self.dispatcher.run, name="launcher", daemon=True)
        self._thread.start()
        return self

    def _target_active(self) -> int:
        """Runs worth holding: one per worker, plus a backlog that keeps the workers busy for
        about ``BACKLOG_SECONDS`` at the measured pace of runs (short runs: a deep backlog;
        long runs: one waiting per worker, so a new backfill is not stuck behind a queue)."""
        mean = self.state.mean_run_seconds
        if mean is None:
            per_worker = 1
        else:
            per_worker = max(1, min(self.per_worker, math.ceil(BACKLOG_SECONDS / mean)))
        return min(self.max_active, self.size * (1 + per_worker))

    @property
    def capacity(self) -> int:
        with self.state.lock:
            busy = sum(len(w.sent()) for w in self.state.workers if w is not None)
            return max(0, self._target_active() - len(self.state.backlog) - busy)

    def submit(self, tasks: Iterable[RunTask]) -> None:
        tasks = list(tasks)
        if self.folder is not None:
            self.folder.mark_queued(tasks)
        with self.state.lock:
            self.state.backlog.extend(tasks)
        self.dispatcher.wake()

    def cancel(self, run_ids: Iterable[int]) -> None:
        wanted = set(run_ids)
        if not wanted:
            return
        state = self.state
        with state.lock:
            kept: deque[RunTask] = deque()
            for task in state.backlog:
                if task.run_id in wanted:
                    state.events.append(
                        RunFinished(task.run_id, utc_now(), Outcome.CANCELED, "canceled")
                    )
                else:
                    kept.append(task)
            state.backlog = kept
            for w in state.workers:
                if w is None:
                    continue
                w.canceled.update(t.run_id for t in w.queued if t.run_id in wanted)
                if w.task is not None and w.task.run_id in wanted:
                    if w.gating:
                        w.terminating = Outcome.CANCELED  # never sent: see Dispatcher._dispatch
                    else:
                        terminate(state, w, Outcome.CANCELED)
        self.dispatcher.signal_events()
        self.dispatcher.wake()

    def poll(self) -> list[LauncherEvent]:
        with self.state.lock:
            events, self.state.events = self.state.events, []
        return events

    def active(self) -> dict[int, RunTask]:
        with self.state.lock:
            found = {t.run_id: t for t in self.state.backlog}
            for w in self.state.workers:
                if w is not None:
                    found.update((t.run_id, t) for t in w.sent())
            return found

    def set_notify(self, callback: Callable[[], None] | None) -> None:
        self.dispatcher.notify = callback

    def set_gate(self, gate: Gate | None) -> None:
        self.state.gate = gate

    def extend_lease(self, owner: str, stop_by: datetime) -> None:
        self.state.deadline.value = time.monotonic() + (stop_by - utc_now()).total_seconds()
        self.dispatcher.wake()

    def revoke_lease(self) -> list[RunTask]:
        with self.state.lock:
            return self.state.revoke()

    def durable_results(self, owner: str, run_ids: Iterable[int]) -> list[LauncherEvent]:
        """What this machine's results folder keeps of these runs (see ``local.folder``); the
        folder is keyed by run, whatever daemon ran it: ``owner`` is not needed."""
        return [] if self.folder is None else self.folder.durable_results(run_ids)

    def discard_results(self, owner: str, run_ids: Iterable[int]) -> None:
        if self.folder is not None:
            self.folder.discard(run_ids)

    def recorded(self, events: Sequence[LauncherEvent]) -> None:
        return None  # what it keeps is per run, and goes with discard_results

    def forget_owner(self, owner: str) -> None:
        return None  # kept per run, discarded as written (and swept after a day)

    def ready_workers(self) -> int:
        """Worker processes started and ready to take runs."""
        with self.state.lock:
            return sum(1 for w in self.state.live() if w.name)

    def warming(self) -> bool:
        """Whether a worker process is still starting (none failed to load the definitions):
        the daemon waits for them before it takes its lease (see ``launchers.base.Warming``)."""
        with self.state.lock:
            if self.state.fatal_error is not None:
                return False
            return any(w is None or w.name is None for w in self.state.workers)

    def worker_pids(self) -> list[int]:
        with self.state.lock:
            return [w.process.pid for w in self.state.workers if w is not None and w.process.pid]

    def close(self, timeout: float = 10.0) -> list[LauncherEvent]:
        """Stop the workers; runs in flight are reported ``WORKER_LOST``."""
        state = self.state
        with state.lock:
            self.dispatcher.closing = True
            tasks = list(state.backlog)
            state.backlog.clear()
            for w in state.workers:
                if w is None:
                    continue
                if w.task is not None:
                    tasks += w.sent()
                    w.task = None
                    w.queued.clear()
                    signal_worker(w.process, signal.SIGTERM)
                else:
                    with contextlib.suppress(OSError):
                        w.conn.send(Stop())
        lost: list[LauncherEvent] = [
            RunFinished(
                t.run_id, utc_now(), Outcome.WORKER_LOST, "the daemon stopped", attempt=t.attempt
            )
            for t in tasks
        ]
        self.dispatcher.wake()
        if self._thread is not None:
            self._thread.join(timeout)
        deadline = time.monotonic() + timeout
        for w in list(state.workers):
            if w is None:
                continue
            w.process.join(max(0.0, deadline - time.monotonic()))
            if w.process.is_alive():
                signal_worker(w.process, signal.SIGKILL)
                w.process.join(1)
            w.conn.close()
        self.dispatcher.close()
        if self.folder is not None:
            self.folder.close()
        return lost
