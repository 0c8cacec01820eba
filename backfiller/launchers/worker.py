"""The body of a persistent worker process of the local launcher.

A worker loads the definitions once, then runs one task at a time, sent by its launcher over a
pipe (typed messages, see ``messages``). Log lines go back through the same pipe (in small
batches); the result goes back when the job returns or raises, after it was appended to the
worker's journal in the results directory (when there is one, see :class:`Journal`), where the
next daemon finds it if this one is gone.
A gated task (:class:`~backfiller.launchers.messages.Gated`) is checked by the worker itself
right before its job runs: one read of the start gate on the worker's own connection (see
``storage.execution.starts``), for it and the gated tasks already in the pipe, which then hold
a start permit for a moment (:class:`_Inbox`); refused, it ends ``NOT_STARTED`` without running.

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
from collections import deque
from dataclasses import dataclass
from datetime import datetime
from multiprocessing.connection import Connection
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from backfiller import ids
from backfiller.clock import utc_now
from backfiller.domain import START_PERMIT_SECONDS
from backfiller.launchers.base import Outcome, RunFinished, RunTask, StartCheck
from backfiller.launchers.messages import (
    Done,
    Fatal,
    Gated,
    LauncherMessage,
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


def _watch(
    lifeline: Connection, deadline: SharedDeadline, current: list[RunLogBuffer | None]
) -> None:
    """Kill the group when the daemon is gone (``lifeline``, which it never writes to, reads
    as ended) or, while a job runs, at the lease deadline. (Not the worker's parent: that is
    the daemon's fork server, which lives on while any worker does.)"""
    while True:
        time.sleep(WATCH_SECONDS)
        try:
            gone = lifeline.poll()
        except (OSError, ValueError):
            gone = True
        if gone:
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
    conn: Connection, options: WorkerOptions, lifeline: Connection, deadline: SharedDeadline
) -> None:
    """Entry point of a worker process (forked by the daemon's fork server)."""
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
        _serve(conn, options, lifeline, deadline)
    except Terminated:
        os._exit(143)


def _serve(
    conn: Connection, options: WorkerOptions, lifeline: Connection, deadline: SharedDeadline
) -> None:
    from backfiller.observability import logs, tracing

    # The worker's own lines (scrubbed); a run's go to the run's log as its code wrote them.
    logs.configure("WARNING", scrub_every_record=False)
    tracing.configure()  # on when the daemon's environment says so
    sender = _Sender(conn)
    current: list[RunLogBuffer | None] = [None]
    threading.Thread(
        target=_watch, args=(lifeline, deadline, current), daemon=True, name="watch"
    ).start()
    from backfiller.definitions.loading import load_definitions

    try:
        definitions = load_definitions(options.definitions)
    except Exception as exc:
        sender.send(Fatal(f"cannot load definitions: {exc}"))
        return
    gate = _OwnGate()
    gate.warm(options.database_url)
    journal = Journal(Path(options.results_dir), "worker") if options.results_dir else None
    name = f"{socket.gethostname()}:{os.getpid()}"
    sender.send(Ready(name))
    inbox = _Inbox(conn, gate)
    while True:
        try:
            message = inbox.next()
        except (EOFError, OSError):
            os._exit(0)
        if isinstance(message, Stop):
            gate.dispose()
            if journal is not None:
                journal.close()
            return
        assert isinstance(message, RunTask | Gated)
        task = message.task if isinstance(message, Gated) else message
        handler = _log_buffer(task.run_id, sender)
        at = utc_now()  # before the gate's read: a pause or cancel answered by now is seen
        outcome, message_text, trace = _refusal(message, at, deadline, inbox)
        if outcome is None:
            if isinstance(message, Gated):
                _starting(task, at, journal, sender)
            current[0] = handler
            outcome, message_text, trace = _run(definitions, task, handler, options)
            current[0] = None
        end = RunFinished(task.run_id, utc_now(), outcome, message_text, trace, name, task.attempt)
        if journal is not None:
            journal.ended(end)  # kept before it is reported: a next daemon finds it
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
            self.gate.start("", [(0, 0, 0)], utc_now())
        except Exception:
            logging.getLogger("backfiller.worker").debug("start gate warm-up", exc_info=True)
            self.dispose()

    def may_start(self, check: StartCheck, tasks: list[RunTask], at: datetime) -> set[int]:
        """The ids of ``tasks`` that the gate lets start (none if it cannot be asked)."""
        from backfiller.storage.execution.starts import StartGate

        if self.gate is None or self.gate.url != check.database_url:
            self.dispose()
            self.gate = StartGate(check.database_url)
        try:
            asked = [(t.run_id, t.attempt, t.backfill_id) for t in tasks]
            return self.gate.start(check.owner, asked, at)
        except Exception:
            logging.getLogger("backfiller.worker").exception("the start gate failed")
            return set()

    def dispose(self) -> None:
        gate, self.gate = self.gate, None
        if gate is not None:
            gate.dispose()


class _Inbox:
    """The worker's pipe, and the start permits of the gated tasks it holds.

    A gated task without a valid permit reads the gate once for itself and for every gated task
    already waiting in the pipe (read ahead, kept in order): those let through may start
    without another read until ``START_PERMIT_SECONDS`` after that read was sent (see
    ``domain.START_PERMIT_SECONDS``: a pause or cancel answers that much after its commit). A
    worker holding 16 short runs reads the gate once for them, not 16 times.
    """

    def __init__(
        self,
        conn: Connection,
        gate: _OwnGate,
        read_ahead: int = 64,
        permit_seconds: float = START_PERMIT_SECONDS,
    ) -> None:
        self.conn = conn
        self.gate = gate
        self.read_ahead = read_ahead
        self.permit_seconds = permit_seconds
        self.held: deque[LauncherMessage] = deque()
        self.permits: dict[tuple[int, int], float] = {}
        """(run id, attempt) to the monotonic time until which it may start."""

    def next(self) -> LauncherMessage:
        """The next message, held or from the pipe (EOFError once the pipe is closed)."""
        return self.held.popleft() if self.held else self.conn.recv()

    def may_start(self, message: Gated, at: datetime) -> bool:
        key = (message.task.run_id, message.task.attempt)
        until = self.permits.pop(key, None)
        if until is not None and time.monotonic() < until:
            return True
        self._read_ahead()
        batch = [message.task]
        batch += [m.task for m in self.held if isinstance(m, Gated) and m.check == message.check]
        sent = time.monotonic()
        allowed = self.gate.may_start(message.check, batch, at)
        for task in batch[1:]:
            if task.run_id in allowed:
                self.permits[(task.run_id, task.attempt)] = sent + self.permit_seconds
        return message.task.run_id in allowed

    def _read_ahead(self) -> None:
        """Take what the pipe already holds (a closed pipe is seen by the next :meth:`next`)."""
        with contextlib.suppress(EOFError, OSError):
            while len(self.held) < self.read_ahead and self.conn.poll(0):
                self.held.append(self.conn.recv())


def _refusal(
    message: RunTask | Gated, at: datetime, deadline: SharedDeadline, inbox: _Inbox
) -> tuple[Outcome | None, str | None, None]:
    """Why the task must not start (``NOT_STARTED``), or ``(None, None, None)``."""
    if time.monotonic() >= deadline.value:
        return Outcome.NOT_STARTED, "the daemon's lease ran out", None
    if isinstance(message, Gated) and not inbox.may_start(message, at):
        return Outcome.NOT_STARTED, "not started", None
    return None, None, None


def _starting(task: RunTask, at: datetime, journal: Journal | None, sender: _Sender) -> None:
    """A gated task passed its gate: say so (journal first, so a next daemon knows it began)."""
    if journal is not None:
        journal.started(task.run_id)
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


SEGMENT_ENTRIES = 1024
"""A journal segment holds about this many runs before its writer starts the next one."""
OPEN_SUFFIX = ".journal"
CLOSED_SUFFIX = ".closed"
"""A segment is renamed from ``.journal`` to ``.closed`` once its writer stops appending."""


class Journal:
    """What one process appends to the results folder: its segments
    ``<kind>-<pid>-<nonce>-<n>.journal`` (``.closed`` once full or closed), one record a line
    (see ``local.folder``). A worker appends ``s <run>`` when a run passes its gate and
    ``e <run> <end as JSON>`` when it ends; the launcher ``q <run>`` for each run it holds (and
    ``s <run>`` for a run it hands over after asking a plain gate itself). One ``write`` per
    record or batch on a file opened once for appending, no file per run: the folder costs a
    run two small writes instead of six file operations. Thread-safe."""

    def __init__(self, folder: Path, kind: str, per_segment: int = SEGMENT_ENTRIES) -> None:
        self.folder = folder
        self.kind = kind
        self.per_segment = per_segment
        self.nonce = os.urandom(4).hex()
        self.seq = 0
        self.entries = 0
        self._fd: int | None = None
        self._lock = threading.Lock()

    def current(self) -> Path:
        """The segment being written (the next one, before the first record)."""
        return self.folder / f"{self.kind}-{os.getpid()}-{self.nonce}-{self.seq}{OPEN_SUFFIX}"

    def queued(self, run_ids: list[int]) -> None:
        self._append("".join(f"q {r}\n" for r in run_ids), len(run_ids))

    def started(self, run_id: int) -> None:
        self._append(f"s {run_id}\n", 0)

    def ended(self, end: RunFinished) -> None:
        self._append(f"e {end.run_id} {json.dumps(_record(end))}\n", 1)

    def _append(self, text: str, entries: int) -> None:
        if not text:
            return
        data = text.encode()
        with self._lock:
            try:
                if self._fd is None:
                    flags = os.O_WRONLY | os.O_CREAT | os.O_APPEND | getattr(os, "O_CLOEXEC", 0)
                    self._fd = os.open(self.current(), flags, 0o600)
                view = memoryview(data)
                while view:
                    view = view[os.write(self._fd, view) :]
            except OSError:
                logging.getLogger("backfiller.worker").warning(
                    "cannot write to the results folder %s", self.folder, exc_info=True
                )
                self._close()
                return
            self.entries += entries
            if self.entries >= self.per_segment:  # a run's records stay in one segment
                self._close()
                self.seq += 1
                self.entries = 0

    def _close(self) -> None:
        fd, self._fd = self._fd, None
        if fd is not None:
            with contextlib.suppress(OSError):
                os.close(fd)
            path = self.current()
            with contextlib.suppress(OSError):
                os.replace(path, path.with_suffix(CLOSED_SUFFIX))

    def close(self) -> None:
        with self._lock:
            self._close()


def _record(end: RunFinished) -> dict[str, Any]:
    return {
        "run_id": end.run_id,
        "attempt": end.attempt,
        "at": end.at.isoformat(),
        "outcome": end.outcome.value,
        "error_message": end.error_message,
        "error_traceback": end.error_traceback,
        "worker": end.worker,
    }


def parse_end(text: str) -> RunFinished | None:
    """A run's end as :meth:`Journal.ended` keeps it (JSON), or None if unreadable."""
    try:
        record = json.loads(text)
        return RunFinished(
            run_id=int(record["run_id"]),
            at=datetime.fromisoformat(record["at"]),
            outcome=Outcome(record["outcome"]),
            error_message=record["error_message"],
            error_traceback=record["error_traceback"],
            worker=record["worker"],
            attempt=record["attempt"],
        )
    except (ValueError, KeyError, TypeError):
        return None
