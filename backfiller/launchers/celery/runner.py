"""The body of the ``backfiller.run`` Celery task, in a worker's pool process.

One delivery of the task is one attempt of one partition, or of several partitions of one job
whose runs are short (the daemon sends those together, see :mod:`.launcher`). Before running
one, the body asks the daemon that submitted it for leave to start (a start request through the
broker); the daemon grants it only if that attempt is still waiting (so a second delivery of the
same attempt, after a worker died or a visibility timeout, is refused: the attempt is the
fencing token) and, with a database gate, only while the backfill still runs. Heartbeats, log
lines and the result then go back to that daemon through the broker: a worker never holds the
database's credentials.
"""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import threading
import time
import traceback
from collections.abc import Sequence
from types import FrameType
from typing import Any

from backfiller.launchers.base import MAX_LOG_LINE_CHARS, MAX_LOG_LINES_PER_RUN, Outcome, RunTask
from backfiller.launchers.celery.link import FLUSH_SECONDS, Current, Link
from backfiller.launchers.celery.protocol import GRANT_WAIT_SECONDS, task_from_message
from backfiller.launchers.run_context import prepare_run

logger = logging.getLogger("backfiller.worker")

FLUSH_LINES = 200


class Terminated(BaseException):
    """Raised inside the job when the run must stop (cancel, timeout)."""


class _LogBuffer(logging.Handler):
    """A run's log lines, shipped to the daemon in batches."""

    def __init__(self, link: Link, current: Current) -> None:
        super().__init__(logging.DEBUG)
        self.link = link
        self.current = current
        self.lines: list[list[Any]] = []
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
            self.lines.append([record.created, record.levelname, message[:MAX_LOG_LINE_CHARS]])
            full = len(self.lines) >= FLUSH_LINES
        if full or time.monotonic() - self.last_flush > FLUSH_SECONDS:
            self.ship()

    def take(self, final: bool = False) -> list[list[Any]]:
        with self.buffer_lock:
            lines, self.lines = self.lines, []
            self.last_flush = time.monotonic()
            if final and self.dropped:
                lines.append(
                    [time.time(), "WARNING", f"{self.dropped} more log lines were dropped"]
                )
        return lines

    def ship_if_stale(self) -> None:
        if time.monotonic() - self.last_flush > FLUSH_SECONDS:
            self.ship()

    def ship(self) -> None:
        lines = self.take()
        if lines:
            task = self.current.task
            self.link.publisher.send(
                self.current.owner,
                {"t": "logs", "run": task.run_id, "attempt": task.attempt, "lines": lines},
            )


HANDED_BACK = "handed back: the daemon did not answer"

_link: Link | None = None
_started: set[tuple[int, int]] = set()
"""Attempts this process has started: a second delivery of one is refused without asking."""


def link_for(broker_url: str) -> Link:
    """This process's link (made on first use: pool processes are forked from the worker)."""
    global _link
    if _link is None or _link.pid != os.getpid():
        _link = Link(broker_url)
    return _link


def run_deliveries(
    messages: Sequence[dict[str, Any]],
    definitions: Any,
    broker_url: str,
    api_url: str | None = None,
) -> str:
    """Run one delivery of the task: its runs (one, or several short runs of one job that its
    daemon sent together), one after another; returns what became of each (for the log).

    Each run asks for leave to start just before it starts, as a run alone does; from the
    second run on, the request travels in one message with the previous run's end."""
    link = link_for(broker_url)
    told: list[str] = []
    ended: tuple[str, dict[str, Any]] | None = None
    """The previous run's end, not sent yet: the next start request carries it."""
    for index, message in enumerate(messages):
        task = task_from_message(message)
        owner = str(message["owner"])
        carried = None
        if ended is not None and ended[0] == owner:
            carried, ended = ended[1], None
        elif ended is not None:
            link.publisher.send(*ended)
            ended = None
        outcome, result = _run_delivery(link, task, owner, message, definitions, api_url, carried)
        told.append(outcome)
        if outcome is HANDED_BACK:
            # Its daemon is gone or out of reach: the runs left are handed back too.
            for rest in messages[index + 1 :]:
                _hand_back(link, task_from_message(rest), str(rest["owner"]))
                told.append(outcome)
            break
        if result is not None:
            ended = (owner, result)
    if ended is not None:
        link.publisher.send(*ended)
    return ", ".join(told)


def _hand_back(link: Link, task: RunTask, owner: str) -> None:
    note = {"t": "undelivered", "run": task.run_id, "attempt": task.attempt}
    note["reply"] = link.queue_name
    link.publisher.try_send(owner, note)


def _run_delivery(
    link: Link,
    task: RunTask,
    owner: str,
    message: dict[str, Any],
    definitions: Any,
    api_url: str | None,
    carried: dict[str, Any] | None,
) -> tuple[str, dict[str, Any] | None]:
    """Ask leave for one run (sending ``carried``, the previous run's end, with the request)
    and run it; what became of it, and its end to send."""
    grace = float(message.get("grace") or 5.0)
    token = (task.run_id, task.attempt)
    if token in _started:
        if carried is not None:
            link.publisher.send(owner, carried)
        return "refused: this attempt already started in this process", None
    answer = link.ask_start(task, owner, GRANT_WAIT_SECONDS, carrying=carried)
    if answer is None:
        _hand_back(link, task, owner)
        return HANDED_BACK, None
    if not answer.get("ok"):
        return "refused: " + str(answer.get("why") or "not startable"), None
    _started.add(token)
    current = Current(task=task, owner=owner, grace=grace, stop_by=float(answer["stop_by"]))
    buffer = _LogBuffer(link, current)

    def final_if_killed() -> dict[str, Any] | None:
        outcome = current.terminating or Outcome.WORKER_LOST
        return _end(task, link, outcome, _reason(outcome, task), None, buffer.take(True))

    current.on_kill = final_if_killed
    current.flush = buffer.ship_if_stale
    link.begin(current)
    try:
        outcome, error, trace = _execute(definitions, task, buffer, api_url)
        result = _end(task, link, outcome, error, trace, buffer.take(True))
    finally:
        link.end()
    return outcome.value, result


def _reason(outcome: Outcome, task: RunTask) -> str:
    if outcome is Outcome.TIMEOUT:
        return f"timed out after {task.timeout_seconds:g} s"
    if outcome is Outcome.CANCELED:
        return "canceled"
    return "stopped by its daemon"


def _end(
    task: RunTask,
    link: Link,
    outcome: Outcome,
    error: str | None,
    trace: str | None,
    lines: list[list[Any]],
) -> dict[str, Any]:
    return {
        "t": "end",
        "run": task.run_id,
        "attempt": task.attempt,
        "outcome": outcome.value,
        "error": error,
        "trace": trace,
        "worker": link.name,
        "at": time.time(),
        "lines": lines,
    }


def _on_sigterm(signum: int, frame: FrameType | None) -> None:
    raise Terminated


def _execute(
    definitions: Any, task: RunTask, buffer: _LogBuffer, api_url: str | None
) -> tuple[Outcome, str | None, str | None]:
    prepared = prepare_run(definitions, task, buffer, api_url)
    if isinstance(prepared, str):
        return Outcome.ERROR, prepared, None
    job, context = prepared
    previous = signal.signal(signal.SIGTERM, _on_sigterm)
    try:
        job(context)
    except Terminated:
        outcome = buffer.current.terminating or Outcome.WORKER_LOST
        return outcome, _reason(outcome, task), None
    except BaseException as exc:
        if buffer.current.terminating is not None:
            outcome = buffer.current.terminating
            return outcome, _reason(outcome, task), None
        message = f"{type(exc).__name__}: {exc}"[:MAX_LOG_LINE_CHARS]
        context.log.error("run failed: %s", message)
        return Outcome.ERROR, message, "".join(traceback.format_exception(exc))
    finally:
        with contextlib.suppress(ValueError):
            signal.signal(signal.SIGTERM, previous)
    return Outcome.SUCCESS, None, None
