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

import logging
import os
import time
from collections.abc import Callable, Sequence
from typing import Any

from backfiller import ids
from backfiller.launchers.base import LogLine, Outcome, RunTask
from backfiller.launchers.celery import process_group
from backfiller.launchers.celery.link import Current, Link
from backfiller.launchers.celery.protocol import GRANT_WAIT_SECONDS, task_from_message, wire_lines
from backfiller.launchers.run_body import (
    JobCall,
    Result,
    RunLogBuffer,
    Terminated,
    execute,
    sigterm_raises,
    stop_reason,
)

logger = logging.getLogger("backfiller.worker")


def _log_buffer(link: Link, current: Current) -> RunLogBuffer:
    """A run's log lines, shipped to its daemon in batches."""

    def ship(lines: list[LogLine]) -> None:
        task = current.task
        body = {"t": "logs", "run": task.run_id, "attempt": task.attempt}
        link.publisher.send(current.owner, {**body, "lines": wire_lines(lines)})

    return RunLogBuffer(ship)


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
    from backfiller.observability import tracing

    tracing.shutdown()  # the task's spans leave now, once its ends are sent
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
    return _run_granted(link, current, message, definitions, api_url)


def _run_granted(
    link: Link, current: Current, message: dict[str, Any], definitions: Any, api_url: str | None
) -> tuple[str, dict[str, Any] | None]:
    """Run a granted attempt: what became of it, and its end to send."""
    task = current.task
    began = time.time()  # its end says when it started (for a takeover to record it)
    buffer = _log_buffer(link, current)

    def final_if_killed() -> dict[str, Any] | None:
        outcome = current.terminating or Outcome.WORKER_LOST
        reason = stop_reason(outcome, task)
        return _end(task, link, outcome, reason, None, buffer.take(True), began)

    current.on_kill = final_if_killed
    current.flush = buffer.flush_if_stale
    # SIGTERM (to the run's group: cancel, timeout) raises inside the job until it returned:
    # one handled just after its return leaves its outcome as it was.
    call = JobCall()
    with sigterm_raises(unless=lambda frame: current.returned or not call.interruptible(frame)):
        link.begin(current)
        try:
            try:
                outcome, error, trace = _observed(
                    task,
                    link.name,
                    message.get("ts"),
                    lambda: execute(
                        definitions, task, buffer, api_url, lambda: current.terminating, call
                    ),
                )
            except Terminated:  # stopped before its job was called
                outcome = current.terminating or Outcome.WORKER_LOST
                error, trace = stop_reason(outcome, task), None
            if not _settled(link, current):
                # Its grace passed first: the watch thread reports it and kills this process.
                while True:
                    time.sleep(1.0)
            _empty_group(current)
            result = _end(task, link, outcome, error, trace, buffer.take(True), began)
        finally:
            link.end()
    return outcome.value, result


def _empty_group(current: Current) -> None:
    """A stopped run: what its job started leaves with it, before its end is reported."""
    if current.terminating is None:
        return
    killed = process_group.stop_the_rest(current.kill_at)
    if killed:
        logger.info("run %s: killed %d processes it left", current.task.run_id, killed)


def _settled(link: Link, current: Current) -> bool:
    """Settle ``current`` (see ``Link.settle``). A stop may come as the job returns: its
    SIGTERM, one per run, then raises here, outside the job, and changes nothing."""
    while True:
        try:
            return link.settle(current)
        except Terminated:
            continue


def _observed(task: RunTask, worker: str, sealed_at: Any, body: Callable[[], Result]) -> Result:
    """Run ``body`` (the job) as the local pool's workers do: in its ``execute`` span (under
    the run's span, whose context came in the task's message), its log lines carrying the run
    and the trace, counted in the worker's metrics (with the wait since its publication,
    ``sealed_at``)."""
    from backfiller.observability import logs, tracing, worker_metrics

    if isinstance(sealed_at, int | float) and not isinstance(sealed_at, bool):
        worker_metrics.run_waited(task.job_name, time.time() - sealed_at)
    began = worker_metrics.run_started()
    outcome: Outcome = Outcome.WORKER_LOST
    try:
        with tracing.job_span(task, worker):
            fields = {"run_id": ids.run_id(task.run_id), "trace_id": tracing.current_trace_id()}
            with logs.bound(backfill_id=ids.backfill_id(task.backfill_id), **fields):
                result = body()
                outcome = result[0]
                logger.info("run attempt %s ended: %s", task.attempt, outcome.value)
        return result
    finally:
        worker_metrics.run_finished(task.job_name, outcome, began)


def _end(
    task: RunTask,
    link: Link,
    outcome: Outcome,
    error: str | None,
    trace: str | None,
    lines: list[LogLine],
    started: float | None = None,
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
        "started": started,
        "lines": wire_lines(lines),
    }
