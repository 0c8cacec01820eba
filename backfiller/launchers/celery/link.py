"""A Celery worker process's line to the daemons: one broker connection, owned by one thread.

The task's body (the process's main thread) asks to start a run, reads the answer, runs the
job, and hands its result over; this thread does all the talking on the broker: it sends what
the body queued (start requests, heartbeats, log lines, results), receives answers, cancels and
lease announcements, and watches the run's deadlines. When the run must stop (canceled, timed
out) it sends SIGTERM to the process, which the body turns into an exception inside the job, and
SIGKILL to the process group after the grace period. When the run's daemon stops announcing its
lease (the daemon died, or the broker is out of reach), the run is killed at once when it
reaches ``stop_by``, before any other daemon may take the partition over.
"""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import socket
import threading
import time
import uuid
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from backfiller.launchers.base import Outcome, RunTask
from backfiller.launchers.celery.app import control_exchange, lease_exchange
from backfiller.launchers.celery.protocol import BEAT_SECONDS, daemon_queue, worker_name

logger = logging.getLogger("backfiller.worker")

POLL_SECONDS = 0.05
KILL_MARGIN_SECONDS = 0.5
"""A run is killed this long before its ``stop_by``, so it is surely gone at ``stop_by``."""
SILENT_OWNER_SECONDS = 5.0
"""A daemon not heard from for this long (while the broker is reachable) is taken for gone."""


@dataclass
class Current:
    """The run this process executes (one at a time)."""

    task: RunTask
    owner: str
    grace: float
    stop_by: float = 0.0
    started: float = field(default_factory=time.monotonic)
    terminating: Outcome | None = None
    kill_at: float | None = None
    last_beat: float = 0.0
    on_kill: Callable[[], dict[str, Any] | None] | None = None


@dataclass
class _Outgoing:
    owner: str
    body: dict[str, Any]
    sent: threading.Event | None = None


class Link:
    def __init__(self, broker_url: str) -> None:
        self.broker_url = broker_url
        self.name = worker_name()
        self.queue_name = f"backfiller.worker.{socket.gethostname()}.{os.getpid()}"
        self.queue_name += f".{uuid.uuid4().hex[:8]}"
        self._lock = threading.Lock()
        self._outbox: deque[_Outgoing] = deque()
        self._answers: dict[tuple[int, int], dict[str, Any]] = {}
        self._waiting: dict[tuple[int, int], threading.Event] = {}
        self._heard: dict[str, float] = {}
        self._stop_by: dict[str, float] = {}
        self._dropped: set[tuple[str, int, int]] = set()
        self.connected_at: float | None = None
        self.current: Current | None = None
        self._thread = threading.Thread(target=self._run, name="backfiller-link", daemon=True)
        self._thread.start()

    # -- the task body's side ------------------------------------------------------------------

    def send(self, owner: str, body: dict[str, Any], *, wait: bool = False) -> None:
        """Queue ``body`` for ``owner``'s daemon; with ``wait``, return once it is on the broker."""
        sent = threading.Event() if wait else None
        with self._lock:
            self._outbox.append(_Outgoing(owner, body, sent))
        if sent is not None:
            while not sent.wait(1.0):
                if not self._thread.is_alive():
                    raise RuntimeError("the worker's broker link died")

    def ask_start(self, task: RunTask, owner: str, timeout: float) -> dict[str, Any] | None:
        """Ask ``owner`` to start ``task``; its answer, or None when it is gone or silent."""
        token = (task.run_id, task.attempt)
        answered = threading.Event()
        with self._lock:
            self._waiting[token] = answered
        self.send(
            owner,
            {
                "t": "start",
                "run": task.run_id,
                "attempt": task.attempt,
                "worker": self.name,
                "reply": self.queue_name,
                "until": time.time() + timeout,
            },
        )
        deadline = time.monotonic() + timeout
        try:
            while not answered.wait(0.1):
                if time.monotonic() > deadline or self.owner_gone(owner):
                    return None
            with self._lock:
                return self._answers.pop(token, None)
        finally:
            with self._lock:
                self._waiting.pop(token, None)
                self._answers.pop(token, None)

    def owner_gone(self, owner: str) -> bool:
        """Whether ``owner`` is surely not answering: its lease ran out, or it fell silent."""
        with self._lock:
            stop_by = self._stop_by.get(owner)
            connected_at = self.connected_at
            heard = self._heard.get(owner, connected_at)
        if stop_by is not None and time.time() > stop_by:
            return True
        if connected_at is None or heard is None:
            return False  # the broker is out of reach: nobody can be heard
        now = time.monotonic()
        return now - connected_at > SILENT_OWNER_SECONDS and now - heard > SILENT_OWNER_SECONDS

    def begin(self, current: Current) -> None:
        with self._lock:
            current.last_beat = time.monotonic()
            self.current = current

    def end(self) -> None:
        with self._lock:
            self.current = None

    # -- the link thread -----------------------------------------------------------------------

    def _run(self) -> None:
        from kombu import Connection

        delay = 0.5
        while True:
            try:
                with Connection(
                    self.broker_url, transport_options={"confirm_publish": True}, heartbeat=10
                ) as conn:
                    conn.ensure_connection(max_retries=1)
                    self._serve(conn)
            except Exception as exc:  # a broker error, or one we cannot classify: reconnect
                with self._lock:
                    self.connected_at = None
                logger.warning("broker link lost (%s); reconnecting", exc)
                self._watch()
                time.sleep(delay)
                delay = min(5.0, delay * 2)
                continue

    def _serve(self, conn: Any) -> None:
        from kombu import Consumer, Producer, Queue

        channel = conn.channel()
        replies = Queue(
            self.queue_name,
            exchange=control_exchange(),
            routing_key=self.queue_name,
            durable=False,
            auto_delete=True,
        )
        leases = Queue(
            self.queue_name + ".leases",
            exchange=lease_exchange(),
            durable=False,
            auto_delete=True,
        )
        producer = Producer(channel, exchange=control_exchange())
        consumer = Consumer(
            channel, [replies, leases], callbacks=[self._on_message], accept=["json"], no_ack=True
        )
        with consumer:
            with self._lock:
                self.connected_at = time.monotonic()
            while True:
                self._flush(producer)
                self._watch(producer)
                with contextlib.suppress(socket.timeout, TimeoutError):
                    conn.drain_events(timeout=POLL_SECONDS)

    def _on_message(self, body: dict[str, Any], message: Any) -> None:
        kind = body.get("t")
        with self._lock:
            if kind == "lease":
                owner = str(body["owner"])
                self._heard[owner] = time.monotonic()
                self._stop_by[owner] = float(body["stop_by"])
                dropped = {(int(r), int(a)) for r, a in body.get("drop") or []}
                current = self.current
                if current is not None and current.owner == owner:
                    token = (current.task.run_id, current.task.attempt)
                    if token in dropped:
                        self._terminate(current, Outcome.WORKER_LOST, grace=0.0)
                    else:
                        current.stop_by = max(current.stop_by, float(body["stop_by"]))
            elif kind == "grant":
                token = (int(body["run"]), int(body["attempt"]))
                waiter = self._waiting.get(token)
                if waiter is not None:
                    self._answers[token] = body
                    waiter.set()
                elif body.get("ok"):
                    self._dropped.add((str(body.get("owner", "")), *token))
            elif kind == "cancel":
                current = self.current
                token = (int(body["run"]), int(body["attempt"]))
                if current is not None and (current.task.run_id, current.task.attempt) == token:
                    self._terminate(current, Outcome.CANCELED, grace=current.grace)

    def _flush(self, producer: Any) -> None:
        with self._lock:
            dropped, self._dropped = self._dropped, set()
            current = self.current
            if current is not None and time.monotonic() - current.last_beat >= BEAT_SECONDS:
                current.last_beat = time.monotonic()
                self._outbox.append(
                    _Outgoing(
                        current.owner,
                        {"t": "beat", "run": current.task.run_id, "attempt": current.task.attempt},
                    )
                )
        for owner, run_id, attempt in dropped:
            # A start granted after this process gave up waiting: the run never ran here.
            logger.warning("run %s attempt %s was granted too late; handing it back", run_id, attempt)
            with self._lock:
                self._outbox.append(
                    _Outgoing(
                        owner,
                        {"t": "undelivered", "run": run_id, "attempt": attempt, "reply": self.queue_name},
                    )
                )
        while True:
            with self._lock:
                if not self._outbox:
                    return
                item = self._outbox[0]
            producer.publish(
                item.body,
                routing_key=daemon_queue(item.owner),
                serializer="json",
                delivery_mode=2,
                retry=False,
            )
            with self._lock:
                self._outbox.popleft()
            if item.sent is not None:
                item.sent.set()

    def _watch(self, producer: Any | None = None) -> None:
        """Stop the current run at its timeout, cancel or ``stop_by``."""
        with self._lock:
            current = self.current
            if current is None:
                return
            now = time.monotonic()
            timeout = current.task.timeout_seconds
            if current.terminating is None and timeout is not None and now - current.started > timeout:
                self._terminate(current, Outcome.TIMEOUT, grace=current.grace)
            stop_in = current.stop_by - time.time() - KILL_MARGIN_SECONDS
            lease_kill = current.stop_by > 0 and stop_in <= 0
            due = current.kill_at is not None and now >= current.kill_at
        if lease_kill:
            logger.error(
                "run %s: its daemon's lease ran out without renewal; killing it",
                current.task.run_id,
            )
            _kill_group()
        if due:
            final = current.on_kill() if current.on_kill is not None else None
            if final is not None and producer is not None:
                with contextlib.suppress(Exception):
                    producer.publish(
                        final,
                        routing_key=daemon_queue(current.owner),
                        serializer="json",
                        delivery_mode=2,
                        retry=False,
                    )
            _kill_group()

    def _terminate(self, current: Current, outcome: Outcome, grace: float) -> None:
        if current.terminating is not None:
            return
        current.terminating = outcome
        current.kill_at = time.monotonic() + grace
        with contextlib.suppress(ProcessLookupError):
            os.kill(os.getpid(), signal.SIGTERM)


def _kill_group() -> None:
    """SIGKILL this process's group: the job, its children, and this process."""
    with contextlib.suppress(OSError):
        os.killpg(os.getpgid(0), signal.SIGKILL)
    os.kill(os.getpid(), signal.SIGKILL)
