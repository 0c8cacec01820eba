"""The body of a persistent worker process of the local launcher.

A worker loads the definitions once, then runs one task at a time, sent by its launcher over a
pipe (typed messages, see ``messages``). Log lines go back through the same pipe (in small
batches); the result goes back when the job returns or raises, after it was written to the
results directory (when there is one), where the next daemon finds it if this one is gone.
A gated task (:class:`~backfiller.launchers.messages.Gated`) is checked by the worker itself
right before its job runs: one read of the start gate on the worker's own connection (see
``storage.execution.starts``); refused, it ends ``NOT_STARTED`` without running.

A worker leads its own process group, which the job's child processes join: cancel, timeout and
a lost lease signal the whole group. A run never outlives its daemon's lease: while a job runs,
a watchdog thread kills the group (SIGKILL) as soon as the parent process is gone or the lease
deadline that the launcher shares with its workers (a monotonic time) is reached.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import signal
import socket
import sys
import threading
import time
from dataclasses import dataclass
from datetime import datetime
from multiprocessing.connection import Connection
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from backfiller import ids
from backfiller.clock import utc_now
from backfiller.launchers.base import Outcome, RunFinished, RunTask, StartCheck
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
from backfiller.launchers.run_body import RunLogBuffer, Terminated, execute, on_sigterm

if TYPE_CHECKING:
    from backfiller.storage.execution.starts import StartGate

WATCH_SECONDS = 0.05


class SharedDeadline(Protocol):
    """A ``multiprocessing.Value('d')``: the monotonic time by which no run may execute."""

    value: float


@dataclass(frozen=True, slots=True)
class WorkerOptions:
    definitions: str
    api_url: str | None = None
    token: str | None = None
    sys_path: tuple[str, ...] = ()
    results_dir: str | None = None
    database_url: str | None = None
    """The daemon's database: the worker opens its start gate's connection before it says it
    is ready (see :meth:`_OwnGate.warm`)."""


class _Sender:
    """Serializes sends on the pipe (the job's thread and the watchdog both send)."""

    def __init__(self, conn: Connection) -> None:
        self.conn = conn
        self.lock = threading.Lock()

    def send(self, message: WorkerMessage) -> None:
        with self.lock:
            self.conn.send(message)


def _log_buffer(run_id: int, sender: _Sender) -> RunLogBuffer:
    """A run's log lines, shipped to the launcher in batches through the pipe."""
    return RunLogBuffer(lambda lines: sender.send(Logs(run_id, tuple(lines))))


def kill_own_group() -> None:
    """SIGKILL this worker's process group: the worker and every process its job started."""
    with contextlib.suppress(OSError):
        os.killpg(os.getpgid(0), signal.SIGKILL)
    os._exit(3)


def _watch(parent_pid: int, deadline: SharedDeadline, current: list[RunLogBuffer | None]) -> None:
    """Kill the group when the daemon is gone or, while a job runs, at the lease deadline."""
    while True:
        time.sleep(WATCH_SECONDS)
        if os.getppid() != parent_pid:
            kill_own_group()
        handler = current[0]
        if handler is None:
            continue
        if time.monotonic() >= deadline.value:
            kill_own_group()
        if handler.stale():
            try:
                handler.flush()
            except (OSError, ValueError):
                kill_own_group()


def run_worker(
    conn: Connection, options: WorkerOptions, parent_pid: int, deadline: SharedDeadline
) -> None:
    """Entry point of a worker process (``multiprocessing`` spawn target)."""
    # Own process group: a Ctrl+C or a SIGTERM sent to the daemon's group reaches the daemon
    # only, which then stops its workers in order. The launcher signals workers one by one.
    with contextlib.suppress(OSError):
        os.setsid()
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, on_sigterm)
    for entry in reversed(options.sys_path):
        if entry not in sys.path:
            sys.path.insert(0, entry)
    if str(Path.cwd()) not in sys.path:
        sys.path.insert(0, str(Path.cwd()))
    from backfiller.observability import worker_metrics

    worker_metrics.start()  # first: before anything imports prometheus_client here
    try:
        _serve(conn, options, parent_pid, deadline)
    except Terminated:
        os._exit(143)


def _serve(
    conn: Connection, options: WorkerOptions, parent_pid: int, deadline: SharedDeadline
) -> None:
    from backfiller.observability import logs, tracing

    # The worker's own lines (scrubbed); a run's go to the run's log as its code wrote them.
    logs.configure("WARNING", scrub_every_record=False)
    tracing.configure()  # on when the daemon's environment says so
    sender = _Sender(conn)
    current: list[RunLogBuffer | None] = [None]
    threading.Thread(
        target=_watch, args=(parent_pid, deadline, current), daemon=True, name="watch"
    ).start()
    from backfiller.definitions.loading import load_definitions

    try:
        definitions = load_definitions(options.definitions)
    except Exception as exc:
        sender.send(Fatal(f"cannot load definitions: {exc}"))
        return
    gate = _OwnGate()
    gate.warm(options.database_url)
    name = f"{socket.gethostname()}:{os.getpid()}"
    sender.send(Ready(name))
    while True:
        try:
            message = conn.recv()
        except (EOFError, OSError):
            os._exit(0)
        if isinstance(message, Stop):
            gate.dispose()
            return
        assert isinstance(message, RunTask | Gated)
        task = message.task if isinstance(message, Gated) else message
        handler = _log_buffer(task.run_id, sender)
        at = utc_now()  # before the gate's read: a pause or cancel answered by now is seen
        outcome, message_text, trace = _refusal(message, at, deadline, gate)
        if outcome is None:
            if isinstance(message, Gated):
                _starting(task, at, options, sender)
            current[0] = handler
            outcome, message_text, trace = _run(definitions, task, handler, options)
            current[0] = None
        end = RunFinished(task.run_id, utc_now(), outcome, message_text, trace, name, task.attempt)
        if options.results_dir:
            write_result(Path(options.results_dir), end)
        sender.send(Done(end, tuple(handler.take(final=True))))


class _OwnGate:
    """The start gate, asked by the worker itself right before it runs a gated task (one read
    on a connection of its own; see ``storage.execution.starts``)."""

    def __init__(self) -> None:
        self.gate: StartGate | None = None

    def warm(self, database_url: str | None) -> None:
        """Pay before the worker says it is ready what its first run would otherwise pay: the
        storage layer's import (SQLAlchemy, the tables: tenths of a second, seconds on a busy
        machine) and, given the database, the driver's import, the connection and the check's
        first compilation (one read of a run that does not exist). A failure here costs
        nothing but that: the first run's check connects again."""
        from backfiller.storage.execution.starts import StartGate

        if database_url is None:
            return
        try:
            from backfiller.storage.engine import normalize_database_url

            self.gate = StartGate(normalize_database_url(database_url))
            self.gate.start("", [(0, 0)], utc_now())
        except Exception:
            logging.getLogger("backfiller.worker").debug("start gate warm-up", exc_info=True)
            self.dispose()

    def may_start(self, check: StartCheck, task: RunTask, at: datetime) -> bool:
        from backfiller.storage.execution.starts import StartGate

        if self.gate is None or self.gate.url != check.database_url:
            self.dispose()
            self.gate = StartGate(check.database_url)
        try:
            allowed = self.gate.start(check.owner, [(task.run_id, task.attempt)], at)
        except Exception:
            logging.getLogger("backfiller.worker").exception("the start gate failed")
            return False
        return task.run_id in allowed

    def dispose(self) -> None:
        gate, self.gate = self.gate, None
        if gate is not None:
            gate.dispose()


def _refusal(
    message: RunTask | Gated, at: datetime, deadline: SharedDeadline, gate: _OwnGate
) -> tuple[Outcome | None, str | None, None]:
    """Why the task must not start (``NOT_STARTED``), or ``(None, None, None)``."""
    if time.monotonic() >= deadline.value:
        return Outcome.NOT_STARTED, "the daemon's lease ran out", None
    if isinstance(message, Gated) and not gate.may_start(message.check, message.task, at):
        return Outcome.NOT_STARTED, "not started", None
    return None, None, None


def _starting(task: RunTask, at: datetime, options: WorkerOptions, sender: _Sender) -> None:
    """A gated task passed its gate: say so (marker first, so a next daemon knows it began)."""
    if options.results_dir:
        mark_started(Path(options.results_dir), task.run_id)
    sender.send(Started(task.run_id, at, task.attempt))


def _run(
    definitions: Any, task: RunTask, handler: RunLogBuffer, options: WorkerOptions
) -> tuple[Outcome, str | None, str | None]:
    """Run the job with its log context, span and metrics."""
    from backfiller.observability import logs, tracing, worker_metrics

    began = worker_metrics.run_started()
    bound = logs.bind(run_id=ids.run_id(task.run_id), backfill_id=ids.backfill_id(task.backfill_id))
    worker = f"{socket.gethostname()}:{os.getpid()}"
    with tracing.job_span(task, worker):  # the user's spans nest under the run's
        traced = logs.bind(trace_id=tracing.current_trace_id())
        outcome, message, trace = execute(definitions, task, handler, options.api_url)
        logs.unbind(traced)
    tracing.shutdown()
    logs.unbind(bound)
    worker_metrics.run_finished(task.job_name, outcome, began)
    return outcome, message, trace


def result_path(folder: Path, run_id: int) -> Path:
    """Where a run's end is kept (a run id names one attempt: each attempt is a new run)."""
    return folder / f"{run_id}.json"


def marker_path(folder: Path, run_id: int, what: str) -> Path:
    """An empty file saying a run was handed to the launcher (``queued``) or a worker
    (``started``): the next daemon tells a run that never started from a lost one by it."""
    return folder / f"{run_id}.{what}"


def mark_started(folder: Path, run_id: int) -> None:
    """``queued`` -> ``started``: the run reached a worker (see ``local.folder``)."""
    try:
        os.replace(marker_path(folder, run_id, "queued"), marker_path(folder, run_id, "started"))
    except OSError:
        with contextlib.suppress(OSError):
            marker_path(folder, run_id, "started").touch()


def write_result(folder: Path, end: RunFinished) -> None:
    """Keep a run's end on disk (atomically) until its daemon has written it."""
    record = {
        "run_id": end.run_id,
        "attempt": end.attempt,
        "at": end.at.isoformat(),
        "outcome": end.outcome.value,
        "error_message": end.error_message,
        "error_traceback": end.error_traceback,
        "worker": end.worker,
    }
    path = result_path(folder, end.run_id)
    temporary = path.with_suffix(f".{os.getpid()}.tmp")
    with contextlib.suppress(OSError):
        temporary.write_text(json.dumps(record))
        os.replace(temporary, path)


def read_result(path: Path) -> RunFinished | None:
    """A run's end kept by :func:`write_result`, or None if unreadable."""
    try:
        record = json.loads(path.read_text())
        return RunFinished(
            run_id=int(record["run_id"]),
            at=datetime.fromisoformat(record["at"]),
            outcome=Outcome(record["outcome"]),
            error_message=record["error_message"],
            error_traceback=record["error_traceback"],
            worker=record["worker"],
            attempt=record["attempt"],
        )
    except (OSError, ValueError, KeyError, TypeError):
        return None
