"""What a dead daemon's runs did while no daemon was alive, read from its queue.

Workers report to the queue of the daemon that launched the run (``app.owner_queue``), which
outlives that daemon. The daemon taking its runs over (under its lease lock, see
``backfiller.daemon.lease``) drains that queue and keeps, per run, what its messages show for
the run's latest attempt:

- an ``end``: the run finished (its real outcome);
- a ``start`` request or an ``undelivered`` note, and no heartbeat, log line or end: a worker
  held the run but, its daemon being gone, nobody granted the start, so it never ran
  (``NOT_STARTED``: the run goes back to its backfill without using a retry);
- anything else (heartbeats only, or nothing): unknown, and the run ends ``WORKER_LOST``.

What is drained is kept until written (``discard``), so a takeover in batches loses nothing.
The messages drained are not acknowledged: they stay held by a connection kept open per dead
daemon until, that daemon having no active run left, its queue is deleted (``forget``). A
daemon killed in the middle of a takeover therefore loses nothing either: the broker gives the
messages back (RabbitMQ, as the connection closes; Redis, by ``acks.give_back_unacked`` when the
next takeover opens the queue) and the next takeover reads them again (what was written
meanwhile is fenced off: the run is no longer active).

The start of a run that ran comes from its end (``started``, the time its start was granted as
its worker saw it), so a run ended by a takeover shows when it started.
"""

from __future__ import annotations

import contextlib
import logging
import threading
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from backfiller.clock import utc_now
from backfiller.launchers.base import (
    LauncherEvent,
    LogLine,
    Outcome,
    RunFinished,
    RunLogs,
    RunStarted,
)
from backfiller.launchers.celery.acks import give_back_unacked, reader_options
from backfiller.launchers.celery.app import owner_queue
from backfiller.launchers.celery.poison import Guard
from backfiller.launchers.celery.protocol import (
    finished_from_message,
    from_timestamp,
    log_lines,
)

logger = logging.getLogger("backfiller.launcher")

DRAIN_LIMIT = 1_000_000
"""At most this many messages are read from one queue at one takeover (a safety bound)."""


@dataclass
class Trace:
    """What a dead daemon's queue shows of one run's latest attempt."""

    attempt: int
    end: RunFinished | None = None
    started: RunStarted | None = None
    ran: bool = False
    asked: bool = False
    lines: list[LogLine] = field(default_factory=list)

    def result(self, run_id: int) -> RunFinished | None:
        if self.end is not None:
            return self.end
        if self.asked and not self.ran:
            return RunFinished(
                run_id,
                utc_now(),
                Outcome.NOT_STARTED,
                "taken back: its daemon died before granting the start",
                attempt=self.attempt,
            )
        return None


class KeptResults:
    """Reads dead daemons' queues through ``broker_url`` (any thread; blocking)."""

    def __init__(self, broker_url: str) -> None:
        self.broker_url = broker_url
        self._lock = threading.Lock()
        self._traces: dict[str, dict[int, Trace]] = {}
        self._open: dict[str, tuple[Any, Any, list[Any]]] = {}
        """Per dead daemon being taken over: the connection, its queue and the messages drained
        from it, not acknowledged (see the module's docstring)."""
        self.guard = Guard("daemon")

    def results(self, owner: str, run_ids: Iterable[int]) -> list[LauncherEvent]:
        """Drain ``owner``'s queue, then what is known of ``run_ids``: the log lines of each
        run's latest attempt, and its end when known."""
        drained = self._drain(owner)
        with self._lock:
            traces = self._traces.setdefault(owner, {})
            for body in drained:
                _note(traces, body)
            found: list[LauncherEvent] = []
            for run_id in run_ids:
                trace = traces.get(run_id)
                if trace is None:
                    continue
                if trace.lines:
                    found.append(RunLogs(run_id, tuple(trace.lines)))
                if trace.started is not None:
                    found.append(trace.started)
                end = trace.result(run_id)
                if end is not None:
                    found.append(end)
            return found

    def discard(self, owner: str, run_ids: Iterable[int]) -> None:
        with self._lock:
            traces = self._traces.get(owner)
            if traces:
                for run_id in run_ids:
                    traces.pop(run_id, None)

    def forget(self, owner: str) -> None:
        """Delete ``owner``'s queue (and forget what was kept of it)."""
        with self._lock:
            self._traces.pop(owner, None)
            opened = self._open.pop(owner, None)
        try:
            if opened is not None:
                conn, queue, held = opened
                for message in held:  # all written: they go with the queue
                    message.ack()
                queue.declare()  # a virtual transport (Redis) deletes only what it knows
                queue.delete()
                conn.release()
                return
            with self._connection() as conn:
                queue = owner_queue(owner)(conn.channel())
                # Declared first: a virtual transport (Redis) deletes only the bindings it knows.
                queue.declare()
                queue.delete()
        except Exception as exc:
            logger.warning("could not delete the queue of %s (%s)", owner, exc)
            self._close(opened)

    def close(self) -> None:
        """Let go of every queue being read (the broker gives back what was drained)."""
        with self._lock:
            opened, self._open = list(self._open.values()), {}
        for one in opened:
            self._close(one)

    @staticmethod
    def _close(opened: tuple[Any, Any, list[Any]] | None) -> None:
        if opened is not None:
            with contextlib.suppress(Exception):
                opened[0].release()

    def _connection(self) -> Any:
        from kombu import Connection

        options = reader_options(self.broker_url)
        conn = Connection(self.broker_url, heartbeat=0, connect_timeout=2, **options)
        conn.ensure_connection(max_retries=1)
        return conn

    def _opened(self, owner: str) -> tuple[Any, Any, list[Any]]:
        """The connection reading ``owner``'s queue (opened, and what an earlier reader held
        put back first)."""
        with self._lock:
            opened = self._open.get(owner)
        if opened is not None:
            return opened
        conn = self._connection()
        try:
            channel = conn.channel()
            queue = owner_queue(owner)(channel)
            given = give_back_unacked(channel, queue.name)
            if given:
                logger.info("%d unacknowledged messages of %s put back on it", given, queue.name)
        except BaseException:
            conn.release()
            raise
        opened = (conn, queue, [])
        with self._lock:
            self._open[owner] = opened
        return opened

    def _drain(self, owner: str) -> list[dict[str, Any]]:
        """Every message in ``owner``'s queue now (none if it does not exist), held until the
        queue is deleted (``forget``). Raises when the broker is out of reach: the takeover is
        then tried again (on a new connection: the old one's messages are given back)."""
        found: list[dict[str, Any]] = []
        opened = self._opened(owner)
        conn, queue, held = opened
        try:
            while len(found) < DRAIN_LIMIT:
                try:
                    message = queue.get(no_ack=False, accept=["json"])
                except conn.channel_errors:
                    with self._lock:
                        self._open.pop(owner, None)
                    self._close(opened)
                    break  # no such queue (RabbitMQ): nothing was kept
                if message is None:
                    break
                held.append(message)
                body = self.guard.open_message(message)
                if body is not None:
                    found.append(body)
        except BaseException:
            with self._lock:
                self._open.pop(owner, None)
            self._close(opened)
            raise
        return found


def _note(traces: dict[int, Trace], body: dict[str, Any]) -> None:
    """Add one message of a dead daemon's queue to what is known of its run."""
    following = body.get("next")
    if isinstance(following, dict):
        _note(traces, following)  # the next run's start request, sent with an end
    try:
        run_id, attempt = int(body["run"]), int(body["attempt"])
    except (KeyError, TypeError, ValueError):
        return
    trace = traces.get(run_id)
    if trace is None or trace.attempt < attempt:
        trace = traces[run_id] = Trace(attempt)
    elif trace.attempt > attempt:
        return  # an older attempt's message
    match body.get("t"):
        case "start" | "undelivered":
            trace.asked = True
        case "beat":
            trace.ran = True
        case "logs":
            trace.ran = True
            trace.lines += log_lines(body.get("lines"))
        case "end":
            trace.ran = True
            trace.lines += log_lines(body.get("lines"))
            trace.end = finished_from_message(body, run_id, attempt)
            started = body.get("started")
            if isinstance(started, int | float) and not isinstance(started, bool):
                trace.started = RunStarted(
                    run_id, from_timestamp(float(started)), trace.end.worker or "", attempt
                )
