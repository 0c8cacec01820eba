"""Answering workers' start requests: the gate's thread, and the answers it sends.

A worker asks to start a run just before it runs it. This launcher grants it only if that
attempt is still waiting here (so a second delivery of the same attempt is refused: the attempt
is the fencing token) and the daemon's start gate (one database round trip for all the requests
waiting together) finds the run still QUEUED and its backfill running. The answers go out on a
connection of the gate thread's own as soon as the gate has answered; if that fails, the
broker's thread sends them once it can.
"""

from __future__ import annotations

import contextlib
import logging
import time
from typing import Any

from backfiller.launchers.base import Outcome, RunStarted, StartRequest
from backfiller.launchers.celery.app import control_exchange
from backfiller.launchers.celery.envelope import seal
from backfiller.launchers.celery.state import Shared, StartAsked
from backfiller.launchers.celery.withdraw import Withdrawals

logger = logging.getLogger("backfiller.launcher")

DEFER_SECONDS = 0.2
"""How soon a start put off for a late end is looked at again."""


class Grants:
    """The gate's thread (``run``) and the answers to start requests."""

    def __init__(self, shared: Shared, broker_url: str) -> None:
        self.shared = shared
        self.replier = Replier(shared, broker_url)
        self.withdrawals = Withdrawals(shared)  # pause and cancel withdraw published runs

    def run(self) -> None:
        """Answer start requests in batches, apart from the broker's thread (the gate is a
        database transaction; announcements must not wait for it)."""
        shared = self.shared
        while not shared.closing:
            self.withdrawals.check()  # the runs not started that may no longer start
            if not shared.starts_waiting.wait(0.5):
                continue
            shared.starts_waiting.clear()
            with shared.lock:
                starts, shared.starts = shared.starts, []
            try:
                if self.answer(starts):
                    time.sleep(DEFER_SECONDS)  # asked again shortly (see ``answer``)
                    shared.starts_waiting.set()
            except Exception:
                logger.exception("the start gate failed; asking again shortly")
                with shared.lock:
                    shared.starts = starts + shared.starts
                time.sleep(0.5)
                shared.starts_waiting.set()
            self.replier.send()
        self.replier.close()

    def answer(self, starts: list[StartAsked]) -> bool:
        """Grant or refuse ``starts``; whether some were put off (``Shared.late_may_come``)."""
        wanted = self._sort(starts)
        if not wanted:
            return False
        allowed = self._through_gate(wanted)
        shared = self.shared
        deferred = False
        with shared.lock:
            stop_by = shared.stop_by()
            for start in wanted:
                run = shared.runs.get(start.run_id)
                if run is None or run.reply is not None:
                    self.refuse(start, "canceled")
                    continue
                if shared.late_pending(run.task):
                    # An earlier attempt's end is being written: it may stand for the partition.
                    self.refuse(start, "a late result of its partition is being recorded")
                    del shared.runs[start.run_id]
                    shared.finish(run, Outcome.NOT_STARTED, "not started: a late result came")
                    continue
                if shared.late_may_come(run.task):
                    shared.starts.append(start)  # answered once the late end came, or soon
                    deferred = True
                    continue
                if allowed is not None and start.run_id not in allowed:
                    self.refuse(start, "its backfill is not running")
                    del shared.runs[start.run_id]
                    shared.finish(run, Outcome.NOT_STARTED, "not started")
                    continue
                run.reply, run.worker = start.reply, start.worker
                run.last_beat, run.granted_at = time.monotonic(), time.time()
                run.fence = stop_by
                # The gate only reads: the start is written with the run's other events.
                shared.events.append(
                    RunStarted(start.run_id, start.at, start.worker, start.attempt)
                )
                self.grant(start, stop_by)
        return deferred

    def _sort(self, starts: list[StartAsked]) -> list[StartAsked]:
        """Answer at once what needs no gate; the requests left for the gate."""
        shared = self.shared
        with shared.lock:
            wanted: list[StartAsked] = []
            for start in starts:
                run = shared.runs.get(start.run_id)
                if start.until and time.time() > start.until:
                    continue  # the worker no longer waits for this answer
                if run is None or run.task.attempt != start.attempt:
                    withdrawn = self.withdrawals.refusal(start.run_id, start.attempt)
                    self.refuse(start, withdrawn or "stale attempt")
                elif run.reply is not None and run.reply == start.reply:
                    if run.dropped is None and run.cancel_at is None:
                        # Asked again: the answer was lost, or the worker gave up waiting and
                        # then took a copy of the task. It waits for this answer now and runs
                        # the attempt on it: no longer taken for given up (``Liveness.watch``),
                        # nor for silent until its heartbeats could come.
                        run.gave_up_at = None
                        run.last_beat = time.monotonic()
                        self.grant(start, run.fence)
                elif any(w.run_id == start.run_id and w.reply == start.reply for w in wanted):
                    continue  # asked again while the first request waits for the gate
                elif run.reply is not None or any(w.run_id == start.run_id for w in wanted):
                    self.refuse(start, "this attempt already started")
                else:
                    start.backfill_id = run.task.backfill_id
                    wanted.append(start)
        return wanted

    def _through_gate(self, wanted: list[StartAsked]) -> set[int] | None:
        gate = self.shared.gate
        if gate is None:
            return None
        return gate(
            [StartRequest(s.run_id, s.attempt, s.at, s.worker, s.backfill_id) for s in wanted]
        )

    def grant(self, start: StartAsked, stop_by: float) -> None:
        body = {"t": "grant", "run": start.run_id, "attempt": start.attempt, "ok": True}
        body.update(stop_by=stop_by, owner=self.shared.owner)
        self.shared.replies.append((start.reply, body))

    def refuse(self, start: StartAsked, why: str) -> None:
        body = {"t": "grant", "run": start.run_id, "attempt": start.attempt, "ok": False}
        body["why"] = why
        self.shared.replies.append((start.reply, body))


def send_replies(shared: Shared, producer: Any) -> None:
    """Send the answers and cancels waiting (from the broker's thread or the gate's)."""
    while True:
        with shared.lock:
            if not shared.replies:
                return
            reply, body = shared.replies.popleft()
        try:
            sealed = seal(body, to=reply)
            producer.publish(
                sealed, routing_key=reply, serializer="json", retry=False, expiration=60
            )
        except BaseException:
            with shared.lock:
                shared.replies.appendleft((reply, body))
            raise


class Replier:
    """The gate's thread sends its answers itself, on a connection of its own, as soon as the
    gate has answered (the broker's thread may be waiting for messages). When that fails, the
    broker's thread sends them once it can."""

    RETRY_SECONDS = 1.0

    def __init__(self, shared: Shared, broker_url: str) -> None:
        self.shared = shared
        self.broker_url = broker_url
        self._conn: Any = None
        self._producer: Any = None
        self._failed_at = 0.0

    def send(self) -> None:
        connected = self.shared.connected_at is not None
        if not connected or time.monotonic() - self._failed_at < self.RETRY_SECONDS:
            return
        try:
            send_replies(self.shared, self._ready())
        except Exception as exc:
            logger.info("answering from the gate's thread failed (%s)", exc)
            self._failed_at = time.monotonic()
            self.close()

    def _ready(self) -> Any:
        if self._producer is None:
            from kombu import Connection, Producer

            from backfiller.launchers.celery.redis_publish import publishing_transport_for

            transport = publishing_transport_for(self.broker_url)  # it only publishes
            self._conn = Connection(self.broker_url, heartbeat=0, connect_timeout=2, **transport)
            self._conn.ensure_connection(max_retries=1)
            self._producer = Producer(self._conn.channel(), exchange=control_exchange())
        return self._producer

    def close(self) -> None:
        if self._conn is not None:
            with contextlib.suppress(Exception):
                self._conn.release()
        self._conn = self._producer = None
