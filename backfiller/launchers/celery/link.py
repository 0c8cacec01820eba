"""A Celery worker process's line to the daemons, and the watch over its run.

Three parts, each on its own connection or thread so that none waits for another:

- :class:`Publisher`: sends to a daemon's queue from any thread (start requests, log lines,
  results); a result is retried until the broker has confirmed it.
- the listener thread: receives answers to start requests, cancels and lease announcements,
  and sends the run's heartbeats;
- the watch thread: stops the run at its timeout or cancel (SIGTERM to the process group,
  which the task's body turns into an exception inside the job; SIGKILL after the grace period,
  see :mod:`.process_group`), and kills it at once when it reaches its daemon's ``stop_by``
  without a newer announcement (the daemon died, or the broker is out of reach), before any
  other daemon may take the partition over.

A stopped run's group is emptied whichever comes first: the job returns within the grace (the
task's body waits out the grace for the rest of the group, SIGKILLs what is left, then reports
the end: :meth:`Link.settle`), or the grace passes first (the watch SIGKILLs the job's children,
reports the end and SIGKILLs the pool process with what is left).
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
from backfiller.launchers.celery import process_group
from backfiller.launchers.celery.app import control_exchange, lease_exchange
from backfiller.launchers.celery.envelope import seal
from backfiller.launchers.celery.poison import Guard, worker_queue_kind
from backfiller.launchers.celery.protocol import (
    BEAT_SECONDS,
    PRESENCE_SECONDS,
    daemon_queue,
    worker_name,
)
from backfiller.launchers.run_body import FLUSH_SECONDS

logger = logging.getLogger("backfiller.worker")

WATCH_SECONDS = 0.05
KILL_MARGIN_SECONDS = 0.5
"""A run is killed this long before its ``stop_by``, so it is surely gone at ``stop_by``."""
ASK_AGAIN_SECONDS = 5.0
"""A start request not answered after this long is sent again (it is not confirmed)."""
SILENT_OWNER_SECONDS = 15.0
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
    returned: bool = False
    """The job returned: the task's body finishes the run (the watch no longer stops it)."""
    killing: bool = False
    """The watch finishes the run: its grace passed before the job returned."""
    on_kill: Callable[[], dict[str, Any] | None] | None = None
    flush: Callable[[], None] | None = None

    @property
    def token(self) -> tuple[int, int]:
        return (self.task.run_id, self.task.attempt)


def _connection(broker_url: str, confirm: bool = True, publishing: bool = False) -> Any:
    """A connection to the broker; ``publishing``: one that only publishes (on Redis, with
    :mod:`.redis_publish`'s transport; the listener's keeps kombu's own)."""
    from kombu import Connection

    from backfiller.launchers.celery.redis_publish import publishing_transport_for

    return Connection(
        broker_url,
        transport_options={"confirm_publish": confirm},
        heartbeat=0,
        connect_timeout=2,
        **(publishing_transport_for(broker_url) if publishing else {}),
    )


class Publisher:
    """Sends messages to daemons' queues; safe to call from any thread.

    With ``confirm`` (results, log lines), a send returns once the broker has the message;
    without (start requests, which are asked again, and heartbeats), it does not wait.
    """

    def __init__(self, broker_url: str, confirm: bool = True) -> None:
        self.broker_url = broker_url
        self.confirm = confirm
        self._lock = threading.Lock()
        self._conn: Any = None
        self._producer: Any = None

    def _ready(self) -> Any:
        if self._producer is None:
            from kombu import Producer

            self._conn = _connection(self.broker_url, self.confirm, publishing=True)
            self._conn.ensure_connection(max_retries=1)
            self._producer = Producer(self._conn.channel(), exchange=control_exchange())
        return self._producer

    def _reset(self) -> None:
        with contextlib.suppress(Exception):
            self._conn.release()
        self._conn = self._producer = None

    def try_send(self, owner: str, body: dict[str, Any], lock_timeout: float = -1) -> bool:
        """One attempt; False when the broker is out of reach (or the lock is busy)."""
        if not self._lock.acquire(timeout=lock_timeout):
            return False
        try:
            queue = daemon_queue(owner)
            self._ready().publish(
                seal(body, to=queue),
                routing_key=queue,
                serializer="json",
                delivery_mode=2,
                retry=False,
            )
            return True
        except Exception as exc:
            logger.warning("cannot reach the broker (%s)", exc)
            self._reset()
            return False
        finally:
            self._lock.release()

    def send(self, owner: str, body: dict[str, Any]) -> None:
        """Send ``body``, retrying until the broker has it (a result must not be lost)."""
        delay = 0.2
        while not self.try_send(owner, body):
            time.sleep(delay)
            delay = min(2.0, delay * 2)


class Link:
    def __init__(self, broker_url: str) -> None:
        self.broker_url = broker_url
        self.name = worker_name()
        self.pid = os.getpid()
        self.queue_name = f"backfiller.worker.{socket.gethostname()}.{os.getpid()}"
        self.queue_name += f".{uuid.uuid4().hex[:8]}"
        self.publisher = Publisher(broker_url)
        self._requests = Publisher(broker_url, confirm=False)
        self._beats = Publisher(broker_url, confirm=False)
        self._granted: deque[tuple[int, int]] = deque(maxlen=64)
        """The latest attempts granted here: a second answer to one of them is no news."""
        self._lock = threading.Lock()
        self._answers: dict[tuple[int, int], dict[str, Any]] = {}
        self._waiting: dict[tuple[int, int], threading.Event] = {}
        self._heard: dict[str, float] = {}
        self._guard = Guard(worker_queue_kind)
        self._stop_by: dict[str, float] = {}
        self.connected_at: float | None = None
        self.current: Current | None = None
        self._listening = threading.Event()
        self._busy = threading.Event()
        """Set while a run executes: the watch and flush threads sleep otherwise."""
        threads = ((self._listen, "listener"), (self._watch, "watch"), (self._flush, "flush"))
        for target, name in threads:
            threading.Thread(target=target, name=f"backfiller-{name}", daemon=True).start()

    # -- the task body's side ------------------------------------------------------------------

    def ask_start(
        self, task: RunTask, owner: str, timeout: float, carrying: dict[str, Any] | None = None
    ) -> dict[str, Any] | None:
        """Ask ``owner`` to start ``task``; its answer, or None when it is gone or silent.

        ``carrying``: the end of the run before it, sent (confirmed) with the first request,
        as one message: ``next`` in the end holds the request."""
        self._listening.wait(timeout)  # answers come to the listener's queue
        token = (task.run_id, task.attempt)
        answered = threading.Event()
        with self._lock:
            self._waiting[token] = answered
        request = {
            "t": "start",
            "run": task.run_id,
            "attempt": task.attempt,
            "worker": self.name,
            "reply": self.queue_name,
            "until": time.time() + timeout,
        }
        deadline = time.monotonic() + timeout
        try:
            sent = carrying is not None  # the first request goes with that end, confirmed
            if carrying is not None:
                self.publisher.send(owner, {**carrying, "next": request})
            while not answered.is_set():
                if not sent and not self._requests.try_send(owner, request):
                    if time.monotonic() > deadline:
                        return None
                    time.sleep(0.5)
                    continue
                # Unconfirmed: asked again if no answer came (the daemon answers once).
                sent = False
                asked = time.monotonic()
                while not answered.wait(0.1) and time.monotonic() - asked < ASK_AGAIN_SECONDS:
                    if time.monotonic() > deadline or self.owner_gone(owner):
                        return None
                if time.monotonic() > deadline:
                    return None
            with self._lock:
                answer = self._answers.pop(token, None)
                if answer is not None and answer.get("ok"):
                    self._granted.append(token)
                return answer
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
        if stop_by is not None and time.time() > stop_by + SILENT_OWNER_SECONDS / 3:
            return True
        if connected_at is None or heard is None:
            return False  # the broker is out of reach: nobody can be heard
        now = time.monotonic()
        return now - connected_at > SILENT_OWNER_SECONDS and now - heard > SILENT_OWNER_SECONDS

    def begin(self, current: Current) -> None:
        with self._lock:
            self.current = current
            self._busy.set()

    def settle(self, current: Current) -> bool:
        """The job of ``current`` returned: from now on nothing stops it from outside (no
        SIGTERM is sent for it), and the task's body reports it. False when the watch already
        took it over (its grace passed): the watch reports it and kills this process."""
        with self._lock:
            if current.killing:
                return False
            current.returned = True
            return True

    def end(self) -> None:
        with self._lock:
            self.current = None
            self._busy.clear()

    # -- the listener thread -------------------------------------------------------------------

    def _listen(self) -> None:
        delay = 0.5
        while True:
            try:
                with _connection(self.broker_url) as conn:
                    conn.ensure_connection(max_retries=1)
                    self._consume(conn)
            except Exception as exc:  # a broker error, or one we cannot classify: reconnect
                with self._lock:
                    self.connected_at = None
                logger.warning("broker link lost (%s); reconnecting", exc)
                time.sleep(delay)
                delay = min(5.0, delay * 2)

    def _consume(self, conn: Any) -> None:
        from kombu import Consumer, Queue

        channel = conn.channel()
        replies = Queue(
            self.queue_name,
            exchange=control_exchange(),
            routing_key=self.queue_name,
            durable=False,
            auto_delete=True,
        )
        leases = Queue(
            self.queue_name + ".leases", exchange=lease_exchange(), durable=False, auto_delete=True
        )
        on_message = self._guard.receiver(self._on_message)
        consumer = Consumer(
            channel, [replies, leases], on_message=on_message, accept=["json"], no_ack=True
        )
        with consumer:
            with self._lock:
                self.connected_at = time.monotonic()
            self._listening.set()
            last_beat = 0.0
            while True:
                with contextlib.suppress(socket.timeout, TimeoutError):
                    conn.drain_events(timeout=BEAT_SECONDS / 4)
                current = self.current
                if current is not None and time.monotonic() - last_beat >= BEAT_SECONDS:
                    last_beat = time.monotonic()
                    run_id, attempt = current.token
                    beat = {"t": "beat", "run": run_id, "attempt": attempt}
                    self._beats.try_send(current.owner, beat, lock_timeout=0.1)
                elif current is None and time.monotonic() - last_beat >= PRESENCE_SECONDS:
                    last_beat = time.monotonic()
                    self._say_here()

    def _say_here(self) -> None:
        """Idle: tell each daemon heard lately that this process is there (a busy process's
        heartbeats say so to its run's daemon)."""
        now = time.monotonic()
        with self._lock:
            owners = [o for o, at in self._heard.items() if now - at < SILENT_OWNER_SECONDS]
        for owner in owners:
            self._beats.try_send(owner, {"t": "here", "worker": self.name}, lock_timeout=0.1)

    def _on_message(self, body: dict[str, Any], message: Any) -> None:
        kind = body.get("t")
        if kind == "lease":
            self._on_lease(body)
        elif kind == "grant":
            token = (int(body["run"]), int(body["attempt"]))
            with self._lock:
                waiter = self._waiting.get(token)
                if waiter is not None:
                    self._answers[token] = body
                    waiter.set()
                    return
                repeated = token in self._granted  # a second answer to a request asked again
            if body.get("ok") and not repeated:
                # Granted after this process gave up waiting: the run never ran here.
                logger.warning("run %s attempt %s was granted too late", *token)
                late = {"t": "undelivered", "run": token[0], "attempt": token[1]}
                late["reply"] = self.queue_name
                self.publisher.try_send(str(body.get("owner", "")), late, lock_timeout=0.1)
        elif kind == "cancel":
            with self._lock:
                current = self.current
                token = (int(body["run"]), int(body["attempt"]))
                if current is not None and current.token == token:
                    self._terminate(current, Outcome.CANCELED, grace=current.grace)

    def _on_lease(self, body: dict[str, Any]) -> None:
        owner = str(body["owner"])
        stop_by = float(body["stop_by"])
        dropped = {(int(r), int(a)) for r, a in body.get("drop") or []}
        with self._lock:
            self._heard[owner] = time.monotonic()
            self._stop_by[owner] = stop_by
            current = self.current
            if current is None or current.owner != owner:
                return
            if current.token in dropped:
                self._terminate(current, Outcome.WORKER_LOST, grace=0.0)
            else:
                current.stop_by = max(current.stop_by, stop_by)

    # -- the watch thread ----------------------------------------------------------------------

    def _watch(self) -> None:
        while True:
            self._busy.wait()
            time.sleep(WATCH_SECONDS)
            with contextlib.suppress(Exception):
                self._check()

    def _flush(self) -> None:
        """Ships the run's log lines every ``FLUSH_SECONDS`` (a thread of its own: shipping
        waits for the broker, the watch must not)."""
        while True:
            self._busy.wait()
            time.sleep(FLUSH_SECONDS)
            current = self.current
            if current is not None and current.flush is not None:
                with contextlib.suppress(Exception):
                    current.flush()

    def _check(self) -> None:
        with self._lock:
            current = self.current
            if current is None:
                return
            now = time.monotonic()
            timeout = current.task.timeout_seconds
            late = timeout is not None and now - current.started > timeout
            if current.terminating is None and late:
                self._terminate(current, Outcome.TIMEOUT, grace=current.grace)
            lease_out = 0 < current.stop_by < time.time() + KILL_MARGIN_SECONDS
            due = current.kill_at is not None and now >= current.kill_at
            due = due and not current.returned
            current.killing = current.killing or due
        if lease_out:
            logger.error("run %s: its daemon's lease ran out; killing it", current.task.run_id)
            process_group.kill_group()
        if due:
            # The job did not return within the grace: its children first, so that they are
            # gone when its end is reported, then this process with what is left of its group.
            process_group.kill_the_rest()
            final = current.on_kill() if current.on_kill is not None else None
            if final is not None:
                self.publisher.try_send(current.owner, final, lock_timeout=1.0)
            process_group.kill_group()

    def _terminate(self, current: Current, outcome: Outcome, grace: float) -> None:
        """SIGTERM the run's group now (its job and its children); SIGKILL after ``grace``
        (under the lock)."""
        if current.terminating is not None or current.returned:
            return
        current.terminating = outcome
        current.kill_at = time.monotonic() + grace
        process_group.signal_group(signal.SIGTERM)
