"""What a daemon's queue tells it: workers' start requests, heartbeats, log lines and ends,
turned into :class:`~backfiller.launchers.base.LauncherEvent` values (the broker's thread).

A message about an attempt this launcher does not hold (a stale attempt) is fenced off; a start
request waits for the gate's thread (:mod:`.grants`).
"""

from __future__ import annotations

import logging
import time
from typing import Any

from backfiller.launchers.base import LauncherEvent, Outcome, RunLogs
from backfiller.launchers.celery.acks import Acks
from backfiller.launchers.celery.dispatch import republish_mates
from backfiller.launchers.celery.protocol import daemon_queue, finished_from_message, log_lines
from backfiller.launchers.celery.state import DaemonRun, Shared, StartAsked, partition_of
from backfiller.observability import launcher_metrics

logger = logging.getLogger("backfiller.launcher")

STOPPED = frozenset({Outcome.CANCELED, Outcome.TIMEOUT, Outcome.WORKER_LOST})
"""Ends after which the run's worker process may have been killed (see ``link``)."""


class Inbox:
    """Reads the daemon's queue (see the module's docstring)."""

    def __init__(self, shared: Shared, acks: Acks) -> None:
        self.shared = shared
        self.acks = acks

    def on_message(self, body: dict[str, Any], message: Any) -> None:
        routed = (getattr(message, "delivery_info", None) or {}).get("routing_key")
        owner = self.shared.owner
        with self.shared.lock:
            if routed and (owner is None or routed != daemon_queue(owner)):
                self.acks.stray(message)
                return
            self.acks.hold(message, self.events_of(body))

    def drop(self, message: Any) -> None:
        """A message refused (see ``poison``): acknowledged with the others, reporting nothing."""
        with self.shared.lock:
            self.acks.hold(message, [])

    def events_of(self, body: dict[str, Any]) -> list[LauncherEvent]:
        """What a worker's message reports (called with the lock held)."""
        shared = self.shared
        kind = body.get("t")
        if kind == "here":  # an idle worker process: counted among the ready ones
            shared.heard_from(str(body.get("worker") or ""))
            return []
        following = body.get("next")
        if kind == "end" and isinstance(following, dict) and following.get("t") == "start":
            self.events_of(following)  # the next run's start request, sent with this end
        try:
            run_id, attempt = int(body["run"]), int(body["attempt"])
        except (KeyError, TypeError, ValueError):
            logger.warning("ignoring a malformed message: %r", body)
            return []
        if kind == "start":
            shared.heard_from(str(body.get("worker") or ""))
            self._asked(body, run_id, attempt)
            return []
        run = shared.runs.get(run_id)
        if kind == "end":
            shared.heard_from(str(body.get("worker") or ""))
        if run is None or run.task.attempt != attempt:
            if kind == "end" and run is None:
                return self._late_end(run_id, attempt, body)
            return []  # a stale attempt: fenced off
        shared.heard_from(run.worker)
        if kind == "beat":
            run.last_beat = time.monotonic()
        elif kind == "logs":
            return [RunLogs(run_id, log_lines(body.get("lines")))]
        elif kind == "end":
            return self._on_end(run, body)
        elif kind == "undelivered":
            reply = body.get("reply")
            if run.reply is None:
                # Its worker gave up waiting: its request is not granted now, and the run is
                # published again.
                shared.starts = [
                    s for s in shared.starts if not (s.run_id == run_id and s.reply == reply)
                ]
                run.published = False
                run.first_sequence = 0  # that copy is gone: the new one is the first
                shared.unpublished.append(run)
                launcher_metrics.republished("undelivered")
            elif run.reply == reply and run.gave_up_at is None:
                # Granted after its worker gave up: it never ran, and costs nothing, unless
                # that worker asked again meanwhile and runs it (its heartbeats say so): it is
                # taken back once the queue shows none for a while (``Liveness.watch``).
                run.gave_up_at = time.monotonic()
        return []

    def _late_end(self, run_id: int, attempt: int, body: dict[str, Any]) -> list[LauncherEvent]:
        """The end of a run this launcher no longer holds: reported lost meanwhile (its worker
        was cut off, and kept the end until it could send it), or ended already (a copy).
        Reported all the same: the daemon records it if nothing replaced the run (see
        ``storage.execution.results``), unless this launcher granted a newer attempt of the
        partition; until it is written, no start of the partition is granted here."""
        shared = self.shared
        lost = shared.lost.pop(run_id, None)
        if lost is not None:
            task = lost[0]
            if task.attempt != attempt:
                return []
            key = partition_of(task)
            shared.lost_partitions.pop(key, None)
            runs = shared.runs.values()
            if any(r.reply is not None and partition_of(r.task) == key for r in runs):
                logger.info("run %s: late end refused, a newer attempt has started", run_id)
                return []
            shared.late[key] = time.monotonic()
            shared.late_runs[run_id] = key
        events: list[LauncherEvent] = []
        lines = log_lines(body.get("lines"))
        if lines:
            events.append(RunLogs(run_id, lines))
        events.append(finished_from_message(body, run_id, attempt))
        if lost is not None:
            logger.warning("run %s: its end came after it was reported lost", run_id)
        return events

    def _asked(self, body: dict[str, Any], run_id: int, attempt: int) -> None:
        shared = self.shared
        shared.starts.append(
            StartAsked(
                run_id,
                attempt,
                str(body.get("worker")),
                str(body.get("reply")),
                float(body.get("until") or 0.0),
            )
        )
        shared.starts_waiting.set()
        run = shared.runs.get(run_id)
        place: tuple[str, int] | None = None
        if run is not None and run.published:
            # The first copy's place: after a republication, the copy that asks is most likely
            # the first (ahead on the queue); the latest copy's place would make every run
            # published between the two look overtaken.
            place = (run.queue, run.first_sequence)
        elif run is None:
            # A withdrawn run's task delivered (it is refused): the runs published before it
            # and not asked for were overtaken all the same, e.g. held by a worker that lost
            # its broker link (Redis gives those back only after its visibility timeout).
            place = shared.withdrawn.get((run_id, attempt))
        if place is not None:
            queue, sequence = place
            shared.asked[queue] = max(shared.asked.get(queue, 0), sequence)

    def _on_end(self, run: DaemonRun, body: dict[str, Any]) -> list[LauncherEvent]:
        if run.reply is None:
            return []
        shared = self.shared
        events: list[LauncherEvent] = []
        lines = log_lines(body.get("lines"))
        if lines:
            events.append(RunLogs(run.task.run_id, lines))
        del shared.runs[run.task.run_id]
        finished = finished_from_message(body, run.task.run_id, run.task.attempt, run.worker)
        events.append(finished)
        took = max(0.0, finished.at.timestamp() - run.granted_at)
        job = run.task.job_name
        shared.took[job] = took if job not in shared.took else 0.8 * shared.took[job] + 0.2 * took
        if finished.outcome in STOPPED:
            # A run that ignored SIGTERM is killed after its end is sent, with its process.
            republish_mates(shared, run)
        return events
