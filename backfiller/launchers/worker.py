"""The body of a persistent worker process of the local launcher.

A worker loads the definitions once, then runs one task at a time, sent by its launcher over a
pipe. Log lines go back through the same pipe (in small batches); the result goes back when the
job returns or raises. A worker never outlives its launcher: it exits on end-of-file on the pipe
and, while a job runs, a watchdog thread exits as soon as the parent process is gone.
"""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import socket
import sys
import threading
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from multiprocessing.connection import Connection
from pathlib import Path
from types import FrameType
from typing import Any

from backfiller.launchers.base import MAX_LOG_LINE_CHARS, MAX_LOG_LINES_PER_RUN, Outcome, RunTask

FLUSH_SECONDS = 0.5
FLUSH_LINES = 200


class Terminated(BaseException):
    """Raised in the job's thread when the launcher sends SIGTERM (cancel or timeout)."""


@dataclass(frozen=True, slots=True)
class WorkerOptions:
    definitions: str
    api_url: str | None = None
    token: str | None = None
    sys_path: tuple[str, ...] = ()


class _Sender:
    """Serializes sends on the pipe (the job's thread and the watchdog both send)."""

    def __init__(self, conn: Connection) -> None:
        self.conn = conn
        self.lock = threading.Lock()

    def send(self, message: tuple[Any, ...]) -> None:
        with self.lock:
            self.conn.send(message)


class _RunLogHandler(logging.Handler):
    """Buffers a run's log lines and ships them to the launcher in batches."""

    def __init__(self, run_id: int, sender: _Sender) -> None:
        super().__init__(logging.DEBUG)
        self.run_id = run_id
        self.sender = sender
        self.buffer: list[tuple[datetime, str, str]] = []
        self.count = 0
        self.dropped = 0
        self.last_flush = time.monotonic()
        self.buffer_lock = threading.Lock()

    def emit(self, record: logging.LogRecord) -> None:
        try:
            message = record.getMessage()
            if record.exc_info:
                message += "\n" + "".join(traceback.format_exception(*record.exc_info))
        except Exception:
            message = str(record.msg)
        with self.buffer_lock:
            if self.count >= MAX_LOG_LINES_PER_RUN:
                self.dropped += 1
                return
            self.count += 1
            at = datetime.fromtimestamp(record.created, UTC)
            self.buffer.append((at, record.levelname, message[:MAX_LOG_LINE_CHARS]))
            full = len(self.buffer) >= FLUSH_LINES
        if full or time.monotonic() - self.last_flush > FLUSH_SECONDS:
            self.flush()

    def take(self) -> list[tuple[datetime, str, str]]:
        with self.buffer_lock:
            lines, self.buffer = self.buffer, []
            self.last_flush = time.monotonic()
            return lines

    def flush(self) -> None:
        lines = self.take()
        if lines:
            self.sender.send(("log", self.run_id, lines))

    def final_lines(self) -> list[tuple[datetime, str, str]]:
        lines = self.take()
        if self.dropped:
            lines.append(
                (datetime.now(UTC), "WARNING", f"{self.dropped} more log lines were dropped")
            )
        return lines


def _client_factory(options: WorkerOptions, run_id: str) -> Callable[[], Any] | None:
    if not options.api_url:
        return None
    url, token = options.api_url, options.token

    def build() -> Any:
        from backfiller.client import Client  # type: ignore[attr-defined,unused-ignore]

        return Client(url, token=token, headers={"X-Backfiller-Run-Id": run_id})

    return build


def _watch_parent(parent_pid: int, current: list[_RunLogHandler | None]) -> None:
    while True:
        time.sleep(FLUSH_SECONDS)
        if os.getppid() != parent_pid:
            os._exit(3)
        handler = current[0]
        if handler is not None and time.monotonic() - handler.last_flush > FLUSH_SECONDS:
            try:
                handler.flush()
            except (OSError, ValueError):
                os._exit(3)


def _on_sigterm(signum: int, frame: FrameType | None) -> None:
    raise Terminated


def run_worker(conn: Connection, options: WorkerOptions, parent_pid: int) -> None:
    """Entry point of a worker process (``multiprocessing`` spawn target)."""
    # Own process group: a Ctrl+C or a SIGTERM sent to the daemon's group reaches the daemon
    # only, which then stops its workers in order. The launcher signals workers one by one.
    with contextlib.suppress(OSError):
        os.setsid()
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, _on_sigterm)
    for entry in reversed(options.sys_path):
        if entry not in sys.path:
            sys.path.insert(0, entry)
    if str(Path.cwd()) not in sys.path:
        sys.path.insert(0, str(Path.cwd()))
    from backfiller.observability import worker_metrics

    worker_metrics.start()  # first: before anything imports prometheus_client here
    try:
        _serve(conn, options, parent_pid)
    except Terminated:
        os._exit(143)


def _serve(conn: Connection, options: WorkerOptions, parent_pid: int) -> None:
    from backfiller.observability import logs, tracing, worker_metrics

    logs.configure("WARNING")  # the worker's own lines (a run's go to the run's log)
    tracing.configure()  # on when the daemon's environment says so
    sender = _Sender(conn)
    current: list[_RunLogHandler | None] = [None]
    threading.Thread(target=_watch_parent, args=(parent_pid, current), daemon=True).start()
    from backfiller.definitions.loading import load_definitions

    try:
        definitions = load_definitions(options.definitions)
    except Exception as exc:
        sender.send(("fatal", f"cannot load definitions: {exc}"))
        return
    name = f"{socket.gethostname()}:{os.getpid()}"
    sender.send(("ready", name))
    while True:
        try:
            task = conn.recv()
        except (EOFError, OSError):
            os._exit(0)
        if task is None:
            return
        assert isinstance(task, RunTask)
        handler = _RunLogHandler(task.run_id, sender)
        current[0] = handler
        began = worker_metrics.run_started()
        bound = logs.bind(run_id=f"run_{task.run_id}", backfill_id=f"bf_{task.backfill_id}")
        with tracing.job_span(task):  # the user's spans nest under the run's
            outcome, message, trace = _execute(definitions, task, handler, options)
        tracing.shutdown()
        logs.unbind(bound)
        worker_metrics.run_finished(task.job_name, outcome, began)
        current[0] = None
        sender.send(("done", task.run_id, outcome.value, message, trace, handler.final_lines()))


def _execute(
    definitions: Any, task: RunTask, handler: _RunLogHandler, options: WorkerOptions
) -> tuple[Outcome, str | None, str | None]:
    from backfiller.definitions.jobs import RunContext

    job = definitions.get_job(task.job_name)
    if job is None:
        return Outcome.ERROR, f"job {task.job_name!r} is not in the worker's definitions", None
    logger = logging.Logger(f"backfiller.run.{task.job_name}", logging.DEBUG)
    logger.addHandler(handler)
    logger.propagate = False
    public_run_id = f"run_{task.run_id}"
    context = RunContext(
        job_name=task.job_name,
        partition_key=task.partition_key,
        partition_start=task.partition_start,
        partition_end=task.partition_end,
        run_id=public_run_id,
        attempt=task.attempt,
        run_config=dict(task.run_config),
        tags=dict(task.tags),
        backfill_id=f"bf_{task.backfill_id}",
        log=logger,
        client_factory=_client_factory(options, public_run_id),
    )
    try:
        job(context)
    except Terminated:
        raise
    except BaseException as exc:
        message = f"{type(exc).__name__}: {exc}"[:MAX_LOG_LINE_CHARS]
        trace = "".join(traceback.format_exception(exc))
        logger.error("run failed: %s", message)
        return Outcome.ERROR, message, trace
    return Outcome.SUCCESS, None, None
