"""The Celery launcher: the daemon's side. Runs are Celery tasks; the daemon keeps the records.

``submit`` publishes a ``backfiller.run`` task per run on its job's queue, or, for a job whose
runs are short, one task for up to ``runs_per_task`` of its runs (``_batches``). Before running
a run, the worker that took its task asks this launcher for leave to start it (see
:mod:`.runner`; from the second run of a task on, the request comes with the previous run's
end): the launcher answers from one thread, in batches, through the daemon's start gate when it
has one, and refuses a second start of an attempt (a duplicate delivery). From then on the
worker reports heartbeats, log lines and the result to this daemon's queue, and this launcher
turns them into the usual :class:`~backfiller.launchers.base.LauncherEvent` values; it writes
nothing to the database.

Liveness: about once a second the launcher announces on the broker until when its runs may
execute (``stop_by``: at most half the heartbeat timeout ahead, and never past the daemon's
lease). A run whose heartbeats stop for half the heartbeat timeout (its worker was SIGKILLed, or
cut off) is left out of the next announcements, so its worker kills it at the last ``stop_by``
it heard; once that time has passed, the run cannot be executing anywhere and the launcher
reports it ``WORKER_LOST``. Cancel sends the worker a stop (SIGTERM, grace, SIGKILL of the
run's process group) and, after the grace period, leaves the run out of announcements too.

While the broker is out of reach the launcher keeps everything (runs not published yet, answers
not sent) and carries on after reconnecting; heartbeats missed during the outage do not count.

On RabbitMQ a message that reports something to write (a run's end, its log lines) is
acknowledged only once the daemon has it in the database (``recorded``): a daemon that dies
in between leaves it in its queue, where the takeover finds it (the broker gives back what a
closed connection did not acknowledge). Other messages are acknowledged when received. On
Redis, which would give an unacknowledged message back only after its visibility timeout (an
hour), every message is taken as received.

Workers report to the queue named after the daemon's lease owner (given by ``extend_lease``).
That queue outlives the daemon: when it dies, its workers' results keep arriving there, and the
daemon that takes its runs over reads them (``durable_results``, see :mod:`.results`) and then
deletes the queue (``forget_owner``). When the daemon loses its lease and starts over as a new
owner, this launcher stops its runs, leaves the old queue for the takeover and consumes the new
owner's queue. A clean stop deletes the daemon's own queue.
"""

from __future__ import annotations

import contextlib
import logging
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from backfiller.definitions.loading import Definitions
from backfiller.launchers.base import (
    Gate,
    LauncherEvent,
    Outcome,
    RunFinished,
    RunLogs,
    RunStarted,
    RunTask,
    StartRequest,
)
from backfiller.launchers.celery.app import control_exchange, lease_exchange, make_app, owner_queue
from backfiller.launchers.celery.protocol import (
    BEAT_SECONDS,
    TASK_NAME,
    daemon_queue,
    default_queue,
    finished_from_message,
    log_lines,
    task_id,
    task_message,
)
from backfiller.launchers.celery.results import KeptResults

logger = logging.getLogger("backfiller.launcher")

POLL_SECONDS = 0.02
WATCH_SECONDS = 0.1
"""How often the runs are looked over for silence, cancels and fences (seconds matter)."""
OVERTAKEN_SECONDS = 10.0
"""A run overtaken on its queue for this long is published again (``_republish_if_overtaken``)."""
PUBLISH_BATCH = 256
RUNS_PER_TASK = 8
"""At most this many runs of one job travel in one task, when the job's runs are short."""
SHORT_RUN_SECONDS = 0.1
"""A job whose runs have lately taken less than this (on average) is short."""
MAX_BATCH = 1_000
FENCE_MARGIN_SECONDS = 1.0
"""Waited past a run's ``stop_by`` before it is taken for stopped (clock skew, kill time)."""


STOPPED = frozenset({Outcome.CANCELED, Outcome.TIMEOUT, Outcome.WORKER_LOST})
"""Ends after which the run's worker process may have been killed (see ``link``)."""


def _now() -> datetime:
    return datetime.now(UTC)


@dataclass
class _Run:
    task: RunTask
    queue: str
    owner: str
    published: bool = False
    reply: str | None = None
    worker: str | None = None
    last_beat: float = 0.0
    fence: float = 0.0
    dropped: Outcome | None = None
    cancel_at: float | None = None
    sequence: int = 0
    published_at: float = 0.0
    republish_after: float = 0.0
    granted_at: float = 0.0
    """When its start was granted (wall clock, for the job's run time)."""
    mates: list[_Run] = field(default_factory=list)
    """The other runs of the task that carries it (short runs travel together)."""


@dataclass
class _Held:
    """A received message not acknowledged yet, and how many of its events wait to be written."""

    message: Any
    waiting: int


@dataclass
class _Farewell:
    """Runs of a lease owner this launcher gave up (``revoke_lease``): announced dropped, so
    that their workers stop them now, until their fence has passed."""

    owner: str
    drop: list[list[int]]
    until: float


@dataclass
class _Start:
    run_id: int
    attempt: int
    worker: str
    reply: str
    until: float
    at: datetime = field(default_factory=_now)


class CeleryLauncher:
    """Runs on Celery workers, on any number of machines, through ``broker_url``.

    Args:
        broker_url: ``amqp://...`` (RabbitMQ) or ``redis://...``.
        definitions: the daemon's definitions (for each job's queue).
        owner: the daemon's lease owner, which names the queue its workers report to; the
            daemon gives it (and each new one) with ``extend_lease``.
        max_active: runs handed over at once, waiting on the broker and running.
        runs_per_task: runs of a short job sent in one task, at most (1: one run a task).
        grace_seconds: between SIGTERM and SIGKILL when a run is canceled or times out.
        heartbeat_timeout: a run silent for this long ends ``WORKER_LOST``.
        api_url: given to runs so that ``context.client`` can reach the service.
    """

    def __init__(
        self,
        broker_url: str,
        definitions: Definitions,
        owner: str | None = None,
        *,
        max_active: int | None = None,
        runs_per_task: int = RUNS_PER_TASK,
        grace_seconds: float = 5.0,
        heartbeat_timeout: float = 20.0,
        api_url: str | None = None,
    ) -> None:
        self.broker_url = broker_url
        self.definitions = definitions
        self.owner = owner
        self.max_active = max_active or 256
        self.runs_per_task = max(1, runs_per_task)
        self._took: dict[str, float] = {}
        """Per job, how long its runs took lately (seconds, a moving average)."""
        self.grace_seconds = grace_seconds
        self.heartbeat_timeout = heartbeat_timeout
        self.api_url = api_url
        self.default_queue = default_queue()
        self.app = make_app(broker_url)
        self._lock = threading.RLock()
        self._runs: dict[int, _Run] = {}
        self._unpublished: deque[_Run] = deque()
        """Runs to publish, oldest first (a run dropped meanwhile is skipped)."""
        self._events: list[LauncherEvent] = []
        self._replies: deque[tuple[str, dict[str, Any]]] = deque()
        self._starts: list[_Start] = []
        self._notify: Callable[[], None] | None = None
        self._gate: Gate | None = None
        self._lease_stop_by: float | None = None
        self._connected_at: float | None = None
        self._last_announce = 0.0
        self._last_watch = 0.0
        self._sequence = 0
        self._asked: dict[str, int] = {}
        """Per queue, the publication sequence of the latest run a worker asked to start."""
        self._closing = False
        self._thread: threading.Thread | None = None
        self._starts_waiting = threading.Event()
        self._replier = _Replier(self)
        self._farewells: list[_Farewell] = []
        self._strays: deque[tuple[str, dict[str, Any]]] = deque()
        """Messages for a former owner's queue, received after leaving it: put back there."""
        self.kept = KeptResults(broker_url)
        self.acks_after_write = broker_url.startswith(("amqp", "pyamqp"))
        self._held: dict[int, tuple[LauncherEvent, _Held]] = {}
        """Per event (by identity, and kept alive so that the identity stays its own) reported
        by a message not acknowledged yet: the event and its message."""
        self._to_requeue: list[Any] = []
        self._unsettled: set[int] = set()
        """Delivery tags of the messages held or to give back: the acknowledgements stop below
        the lowest (one cumulative acknowledgement a pass, see ``_settle``)."""
        self._given_back: set[int] = set()
        """Delivery tags of messages given back to their queue (no longer to acknowledge)."""
        self._received_up_to = 0
        self._acked_up_to = 0

    # -- the daemon's side ---------------------------------------------------------------------

    def start(self) -> CeleryLauncher:
        self._thread = threading.Thread(target=self._run, name="celery-launcher", daemon=True)
        self._thread.start()
        threading.Thread(target=self._answer, name="celery-launcher-gate", daemon=True).start()
        return self

    @property
    def connected(self) -> bool:
        return self._connected_at is not None

    @property
    def capacity(self) -> int:
        with self._lock:
            return max(0, self.max_active - len(self._runs))

    def submit(self, tasks: Iterable[RunTask]) -> None:
        with self._lock:
            owner = self.owner
            for task in tasks:
                job = self.definitions.get_job(task.job_name)
                queue = (job.queue if job is not None else None) or self.default_queue
                run = _Run(task, queue, owner or "")
                if owner is None:  # the lease was lost meanwhile: it never leaves
                    self._finish(run, Outcome.NOT_STARTED, "not started: no lease")
                    continue
                self._runs[task.run_id] = run
                self._unpublished.append(run)
            self._signal()

    def poll(self) -> list[LauncherEvent]:
        with self._lock:
            events, self._events = self._events, []
        return events

    def active(self) -> dict[int, RunTask]:
        with self._lock:
            return {run_id: run.task for run_id, run in self._runs.items()}

    def set_notify(self, callback: Callable[[], None] | None) -> None:
        self._notify = callback

    def set_gate(self, gate: Gate | None) -> None:
        self._gate = gate

    @property
    def queue_name(self) -> str | None:
        """The queue workers report to (None until the daemon gives its owner)."""
        owner = self.owner
        return None if owner is None else daemon_queue(owner)

    def extend_lease(self, owner: str, stop_by: datetime) -> None:
        with self._lock:
            if owner != self.owner:
                self.owner = owner  # a new daemon's name (after revoke_lease): a new queue
            self._lease_stop_by = stop_by.timestamp()

    def revoke_lease(self) -> list[RunTask]:
        """Stop every run now and forget them all; leave the owner's queue to the takeover.

        The runs are announced dropped (their workers stop them at once, as lost), not
        canceled: a run's end that reaches the queue is then its true outcome for the daemon
        taking the runs over.
        """
        with self._lock:
            tasks = [run.task for run in self._runs.values()]
            started = [r for r in self._runs.values() if r.reply is not None]
            if self.owner is not None and started:
                drop = [[r.task.run_id, r.task.attempt] for r in started]
                until = max(r.fence for r in started) + FENCE_MARGIN_SECONDS
                self._farewells.append(_Farewell(self.owner, drop, until))
                self._last_announce = 0.0
            self._lease_stop_by = time.time()
            self._runs.clear()
            self._unpublished.clear()
            self.owner = None  # stop consuming its queue now; the next lease names the new one
            # What was received and not written goes back to the queue, for the takeover.
            held = {id(h.message): h.message for _, h in self._held.values()}
            self._to_requeue += held.values()
            self._held.clear()
        return tasks

    def durable_results(self, owner: str, run_ids: Iterable[int]) -> list[LauncherEvent]:
        """What ``owner``'s workers reported while no daemon read its queue (see ``results``)."""
        if owner == self.owner:
            return []
        return self.kept.results(owner, run_ids)

    def discard_results(self, owner: str, run_ids: Iterable[int]) -> None:
        if owner != self.owner:
            self.kept.discard(owner, run_ids)

    def recorded(self, events: Sequence[LauncherEvent]) -> None:
        """Acknowledge the messages whose every event is now in the database."""
        with self._lock:
            for event in events:
                _, held = self._held.pop(id(event), (None, None))
                if held is not None:
                    held.waiting -= 1
                    if held.waiting == 0:
                        self._unsettled.discard(held.message.delivery_tag)

    def forget_owner(self, owner: str) -> None:
        """``owner`` is wholly taken over: delete its queue."""
        if owner != self.owner:
            self.kept.forget(owner)

    def cancel(self, run_ids: Iterable[int]) -> None:
        with self._lock:
            for run_id in run_ids:
                run = self._runs.get(run_id)
                if run is None:
                    continue
                if run.reply is None:
                    # Not started: refused when a worker asks to start it.
                    del self._runs[run_id]
                    self._finish(run, Outcome.CANCELED, "canceled")
                elif run.cancel_at is None:
                    run.cancel_at = time.monotonic() + self.grace_seconds
                    self._send_cancel(run)
        self._signal()

    def close(self, timeout: float = 10.0) -> list[LauncherEvent]:
        """Stop the runs in flight, wait until they surely stopped, and report them lost."""
        with self._lock:
            for run in self._runs.values():
                if run.reply is not None:
                    self._send_cancel(run)
                    run.dropped = Outcome.WORKER_LOST
        deadline = time.monotonic() + max(timeout, self.heartbeat_timeout / 2 + 2)
        while time.monotonic() < deadline:
            with self._lock:
                if all(r.reply is None for r in self._runs.values()):
                    break
            time.sleep(0.05)
        with self._lock:
            lost: list[LauncherEvent] = self._events + [
                RunFinished(
                    r.task.run_id,
                    _now(),
                    Outcome.WORKER_LOST,
                    "the daemon stopped",
                    attempt=r.task.attempt,
                )
                for r in self._runs.values()
            ]
            self._events = []
            self._runs.clear()
            self._lease_stop_by = 0.0
            self._last_announce = 0.0
        time.sleep(2 * POLL_SECONDS + 0.1)  # one last announcement: this owner is gone
        self._closing = True
        if self._thread is not None:
            self._thread.join(timeout)
        return lost

    # -- helpers (called with the lock held) ---------------------------------------------------

    def _hold(self, message: Any, events: list[LauncherEvent]) -> None:
        """Report ``events``; acknowledge ``message`` once they are written (see ``recorded``),
        or at once if it reports nothing."""
        self._events += events
        if not self.acks_after_write:
            return
        self._received_up_to = max(self._received_up_to, message.delivery_tag)
        if not events:
            return
        self._unsettled.add(message.delivery_tag)
        held = _Held(message, len(events))
        for event in events:
            self._held[id(event)] = (event, held)

    def _signal(self) -> None:
        callback = self._notify
        if callback is not None and self._events:
            callback()

    def _finish(self, run: _Run, outcome: Outcome, message: str | None) -> None:
        task = run.task
        self._events.append(
            RunFinished(task.run_id, _now(), outcome, message, None, run.worker, task.attempt)
        )

    def _send_cancel(self, run: _Run) -> None:
        assert run.reply is not None
        body = {"t": "cancel", "run": run.task.run_id, "attempt": run.task.attempt}
        self._replies.append((run.reply, body))

    def _stop_by(self) -> float:
        stop_by = time.time() + self.heartbeat_timeout / 2
        if self._lease_stop_by is not None:
            stop_by = min(stop_by, self._lease_stop_by)
        return stop_by

    # -- the launcher's thread -----------------------------------------------------------------

    def _run(self) -> None:
        from kombu import Connection

        delay = 0.5
        while not self._closing:
            try:
                # No publisher confirms (each would wait one broker round trip): a task lost
                # with a broken connection is published again after reconnecting (it never
                # started: the daemon saw no start request), and a lost answer is asked again.
                with Connection(self.broker_url, heartbeat=10) as conn:
                    conn.ensure_connection(max_retries=1)
                    self._serve(conn)
                    return
            except Exception as exc:
                with self._lock:
                    if self._connected_at is not None:
                        logger.warning("broker connection lost (%s); reconnecting", exc)
                    self._connected_at = None
                    self._unpublished.clear()
                    for run in self._runs.values():
                        if run.reply is None:
                            run.published = False  # publish again; a duplicate is refused
                            self._unpublished.append(run)
                time.sleep(delay)
                delay = min(5.0, delay * 2)

    def _serve(self, conn: Any) -> None:
        from kombu import Producer

        channel = conn.channel()
        control = Producer(channel, exchange=control_exchange())
        leases = Producer(channel, exchange=lease_exchange())
        tasks = Producer(channel)
        with self._lock:
            self._connected_at = time.monotonic()
            # Messages of a former connection: the broker gives them again on this one.
            self._held.clear()
            self._to_requeue.clear()
            self._unsettled.clear()
            self._given_back.clear()
            self._received_up_to = self._acked_up_to = 0
        consumer: Any = None
        serving: str | None = None
        try:
            while not self._closing:
                if self.owner != serving:
                    consumer, serving = self._consume(channel, consumer, self.owner)
                more = self._publish_tasks(tasks)
                self._send_replies(control)
                self._put_back_strays(control)
                self._announce(leases)
                self._watch()
                self._drain(conn, consumer, 0.001 if more else POLL_SECONDS)
                self._settle(channel)
                with self._lock:
                    self._signal()
            if consumer is not None and serving is not None:
                consumer.cancel()
                # A clean stop: this daemon's runs are requeued by itself, nobody reads it.
                owner_queue(serving)(channel).delete()
        finally:
            with contextlib.suppress(Exception):
                if consumer is not None:
                    consumer.cancel()

    def _settle(self, channel: Any) -> None:
        """Give back what a lost lease left unwritten, then acknowledge every message received
        up to the oldest still held, in one cumulative acknowledgement."""
        with self._lock:
            to_requeue, self._to_requeue = self._to_requeue, []
        for message in to_requeue:
            message.requeue()
        with self._lock:
            given_back = {m.delivery_tag for m in to_requeue}
            self._unsettled -= given_back
            self._given_back |= given_back
            upto = min(self._unsettled) - 1 if self._unsettled else self._received_up_to
            # The tag acknowledged must be one still unacknowledged (the broker refuses another).
            while upto in self._given_back:
                upto -= 1
            if upto <= self._acked_up_to:
                return
            self._acked_up_to = upto
            self._given_back = {tag for tag in self._given_back if tag > upto}
        channel.basic_ack(upto, multiple=True)

    def _consume(self, channel: Any, consumer: Any, owner: str | None) -> tuple[Any, str | None]:
        """Stop consuming the former owner's queue (it stays, for the takeover) and consume
        ``owner``'s."""
        from kombu import Consumer

        if consumer is not None:
            consumer.cancel()
        if owner is None:
            return None, None
        consumer = Consumer(
            channel, [owner_queue(owner)], callbacks=[self._on_message], accept=["json"]
        )
        consumer.no_ack = not self.acks_after_write
        consumer.consume()
        return consumer, owner

    def _drain(self, conn: Any, consumer: Any, timeout: float) -> None:
        if consumer is None:
            time.sleep(timeout)  # no owner yet: nothing to receive
            return
        for _ in range(MAX_BATCH):
            try:
                conn.drain_events(timeout=timeout)
            except TimeoutError:
                return
            timeout = 0.001

    def _publish_tasks(self, producer: Any) -> bool:
        """Publish up to ``PUBLISH_BATCH`` runs (the rest on the next pass: announcements and
        answers must not wait behind a long backlog)."""
        with self._lock:
            todo: list[_Run] = []
            while self._unpublished and len(todo) < PUBLISH_BATCH:
                run = self._unpublished.popleft()
                if self._runs.get(run.task.run_id) is run and not run.published:
                    todo.append(run)
            more = bool(self._unpublished)
        for batch in self._batches(todo):
            messages = []
            for run in batch:
                message = task_message(run.task, run.owner)
                message["grace"] = self.grace_seconds
                messages.append(message)
            name = task_id(batch[0].task, len(batch))
            # Celery's own message (protocol 2) and publishing, without ``send_task``'s routing,
            # result and parent lookups; Celery's repr of the arguments costs more than the
            # rest of the message, so the task id stands for them.
            celery_message = self.app.amqp.create_task_message(
                name, TASK_NAME, messages, {}, argsrepr=f"[{name}]", kwargsrepr="{}"
            )
            self.app.amqp.send_task_message(
                producer, TASK_NAME, celery_message, queue=batch[0].queue, retry=False
            )
            with self._lock:
                for run in batch:
                    run.published = True
                    run.mates = batch
                    self._sequence += 1
                    run.sequence, run.published_at = self._sequence, time.monotonic()
        return more

    def _batches(self, runs: list[_Run]) -> list[list[_Run]]:
        """The runs in tasks: each alone, but a short job's runs (``SHORT_RUN_SECONDS``) up to
        ``runs_per_task`` together; they then cost one task's messages between them, and the
        start request of each but the first travels with its predecessor's end."""
        batches: list[list[_Run]] = []
        open_batches: dict[tuple[str, str, str], list[_Run]] = {}
        for run in runs:
            took = self._took.get(run.task.job_name)
            if self.runs_per_task == 1 or took is None or took >= SHORT_RUN_SECONDS:
                batches.append([run])
                continue
            key = (run.queue, run.owner, run.task.job_name)
            batch = open_batches.get(key)
            if batch is None or len(batch) >= self.runs_per_task:
                batch = open_batches[key] = []
                batches.append(batch)
            batch.append(run)
        return batches

    def _send_replies(self, producer: Any) -> None:
        """Send the answers and cancels waiting (from this thread or the gate's)."""
        while True:
            with self._lock:
                if not self._replies:
                    return
                reply, body = self._replies.popleft()
            try:
                producer.publish(
                    body, routing_key=reply, serializer="json", retry=False, expiration=60
                )
            except BaseException:
                with self._lock:
                    self._replies.appendleft((reply, body))
                raise

    def _announce(self, producer: Any) -> None:
        now = time.monotonic()
        if now - self._last_announce < BEAT_SECONDS:
            return
        with self._lock:
            owner = self.owner
            stop_by = self._stop_by()
            live = [r for r in self._runs.values() if r.reply is not None and r.dropped is None]
            drop = [
                [r.task.run_id, r.task.attempt]
                for r in self._runs.values()
                if r.reply is not None and r.dropped is not None
            ]
            self._farewells = [f for f in self._farewells if time.time() < f.until]
            farewells = list(self._farewells)
        announcements = [(f.owner, time.time(), f.drop) for f in farewells]
        if owner is not None:
            announcements.append((owner, stop_by, drop))
        for name, until, dropped in announcements:
            producer.publish(
                {"t": "lease", "owner": name, "stop_by": until, "drop": dropped},
                serializer="json",
                retry=False,
                expiration=5,
            )
        self._last_announce = now
        with self._lock:
            for run in live:
                if run.dropped is None:
                    run.fence = max(run.fence, stop_by)

    def _watch(self) -> None:
        """Runs gone silent or canceled are dropped; once their fence passed, they end."""
        now = time.monotonic()
        if now - self._last_watch < WATCH_SECONDS:
            return
        self._last_watch = now
        half = self.heartbeat_timeout / 2
        with self._lock:
            connected_at = self._connected_at
            for run_id, run in list(self._runs.items()):
                if run.reply is None:
                    self._republish_if_overtaken(run, now)
                    continue
                if run.dropped is None:
                    if run.cancel_at is not None and now >= run.cancel_at:
                        run.dropped = Outcome.CANCELED
                    elif connected_at is not None and now - max(run.last_beat, connected_at) > half:
                        logger.warning("run %s: no heartbeat from %s", run_id, run.worker)
                        run.dropped = Outcome.WORKER_LOST
                if run.dropped is not None and time.time() > run.fence + FENCE_MARGIN_SECONDS:
                    del self._runs[run_id]
                    why = "canceled" if run.dropped is Outcome.CANCELED else "the worker was lost"
                    self._finish(run, run.dropped, why)
                    self._republish_mates(run)

    def _republish_mates(self, run: _Run) -> None:
        """The runs that came in one task with ``run``, lost or stopped, and that have not
        asked to start: its worker's process may be gone with them (killed), so they are
        published again (if it is not, the copy that asks second is refused)."""
        for mate in run.mates:
            waiting = mate.reply is None and mate.published
            if waiting and mate is not run and self._runs.get(mate.task.run_id) is mate:
                mate.published = False
                self._unpublished.append(mate)

    def _republish_if_overtaken(self, run: _Run, now: float) -> None:
        """Publish a run again when runs published after it on its queue have asked to start
        while it has not, for a while: a worker holds it without running it (Redis gives a
        dead worker's prefetched tasks back only after its visibility timeout; Celery keeps
        prefetched tasks behind long runs). The copy that asks first runs; the other is
        refused. The wait doubles at each republication."""
        if not run.published or self._asked.get(run.queue, 0) <= run.sequence:
            return
        wait = run.republish_after or OVERTAKEN_SECONDS
        if now - run.published_at < wait:
            return
        logger.info("run %s was overtaken on its queue; publishing it again", run.task.run_id)
        run.republish_after = 2 * wait
        run.published = False
        self._unpublished.append(run)

    # -- messages from workers -----------------------------------------------------------------

    def _put_back_strays(self, producer: Any) -> None:
        """Messages received for a former owner after leaving its queue go back to it, for
        the daemon that takes that owner's runs over."""
        while True:
            with self._lock:
                if not self._strays:
                    return
                queue, body = self._strays.popleft()
            producer.publish(body, routing_key=queue, serializer="json", delivery_mode=2)

    def _on_message(self, body: dict[str, Any], message: Any) -> None:
        routed = (getattr(message, "delivery_info", None) or {}).get("routing_key")
        if routed and routed != self.queue_name:
            with self._lock:
                if self.acks_after_write:
                    self._received_up_to = max(self._received_up_to, message.delivery_tag)
                    self._unsettled.add(message.delivery_tag)
                    self._to_requeue.append(message)  # back to its queue, unacknowledged
                else:
                    self._strays.append((str(routed), body))
            return
        with self._lock:
            self._hold(message, self._events_of(body))

    def _events_of(self, body: dict[str, Any]) -> list[LauncherEvent]:
        """What a worker's message reports (called with the lock held)."""
        kind = body.get("t")
        following = body.get("next")
        if kind == "end" and isinstance(following, dict) and following.get("t") == "start":
            self._events_of(following)  # the next run's start request, sent with this end
        try:
            run_id, attempt = int(body["run"]), int(body["attempt"])
        except (KeyError, TypeError, ValueError):
            logger.warning("ignoring a malformed message: %r", body)
            return []
        if kind == "start":
            self._starts.append(
                _Start(
                    run_id,
                    attempt,
                    str(body.get("worker")),
                    str(body.get("reply")),
                    float(body.get("until") or 0.0),
                )
            )
            self._starts_waiting.set()
            run = self._runs.get(run_id)
            if run is not None and run.published:
                self._asked[run.queue] = max(self._asked.get(run.queue, 0), run.sequence)
            return []
        run = self._runs.get(run_id)
        if run is None or run.task.attempt != attempt:
            return []  # a stale attempt: fenced off
        if kind == "beat":
            run.last_beat = time.monotonic()
        elif kind == "logs":
            return [RunLogs(run_id, log_lines(body.get("lines")))]
        elif kind == "end":
            return self._on_end(run, body)
        elif kind == "undelivered":
            if run.reply is None:
                run.published = False  # its worker gave up waiting: publish it again
                self._unpublished.append(run)
            elif run.reply == body.get("reply"):
                del self._runs[run_id]
                self._finish(run, Outcome.WORKER_LOST, "the worker gave up before starting")
        return []

    def _on_end(self, run: _Run, body: dict[str, Any]) -> list[LauncherEvent]:
        if run.reply is None:
            return []
        events: list[LauncherEvent] = []
        lines = log_lines(body.get("lines"))
        if lines:
            events.append(RunLogs(run.task.run_id, lines))
        del self._runs[run.task.run_id]
        finished = finished_from_message(body, run.task.run_id, run.task.attempt, run.worker)
        events.append(finished)
        took = max(0.0, finished.at.timestamp() - run.granted_at)
        job = run.task.job_name
        self._took[job] = took if job not in self._took else 0.8 * self._took[job] + 0.2 * took
        if finished.outcome in STOPPED:
            # A run that ignored SIGTERM is killed after its end is sent, with its process.
            self._republish_mates(run)
        return events

    def _answer(self) -> None:
        """The gate's thread: answers start requests in batches, apart from the broker's
        thread (the gate is a database transaction; announcements must not wait for it)."""
        while not self._closing:
            if not self._starts_waiting.wait(0.5):
                continue
            self._starts_waiting.clear()
            with self._lock:
                starts, self._starts = self._starts, []
            try:
                self._answer_starts(starts)
            except Exception:
                logger.exception("the start gate failed; asking again shortly")
                with self._lock:
                    self._starts = starts + self._starts
                time.sleep(0.5)
                self._starts_waiting.set()
            self._replier.send()
        self._replier.close()

    def _answer_starts(self, starts: list[_Start]) -> None:
        with self._lock:
            wanted: list[_Start] = []
            for start in starts:
                run = self._runs.get(start.run_id)
                if start.until and time.time() > start.until:
                    continue  # the worker no longer waits for this answer
                if run is None or run.task.attempt != start.attempt:
                    self._refuse(start, "stale attempt")
                elif run.reply is not None and run.reply == start.reply:
                    if run.dropped is None and run.cancel_at is None:
                        self._grant(start, run.fence)  # asked again: the answer was lost
                elif any(w.run_id == start.run_id and w.reply == start.reply for w in wanted):
                    continue  # asked again while the first request waits for the gate
                elif run.reply is not None or any(w.run_id == start.run_id for w in wanted):
                    self._refuse(start, "this attempt already started")
                else:
                    wanted.append(start)
        if not wanted:
            return
        allowed = self._through_gate(wanted)
        with self._lock:
            stop_by = self._stop_by()
            for start in wanted:
                run = self._runs.get(start.run_id)
                if run is None or run.reply is not None:
                    self._refuse(start, "canceled")
                    continue
                if allowed is not None and start.run_id not in allowed:
                    self._refuse(start, "its backfill is not running")
                    del self._runs[start.run_id]
                    self._finish(run, Outcome.NOT_STARTED, "not started")
                    continue
                run.reply, run.worker = start.reply, start.worker
                run.last_beat, run.granted_at = time.monotonic(), time.time()
                run.fence = stop_by
                # The gate only reads: the start is written with the run's other events.
                self._events.append(RunStarted(start.run_id, start.at, start.worker, start.attempt))
                self._grant(start, stop_by)

    def _through_gate(self, wanted: list[_Start]) -> set[int] | None:
        gate = self._gate
        if gate is None:
            return None
        return gate([StartRequest(s.run_id, s.attempt, s.at, s.worker) for s in wanted])

    def _grant(self, start: _Start, stop_by: float) -> None:
        body = {"t": "grant", "run": start.run_id, "attempt": start.attempt, "ok": True}
        body.update(stop_by=stop_by, owner=self.owner)
        self._replies.append((start.reply, body))

    def _refuse(self, start: _Start, why: str) -> None:
        body = {"t": "grant", "run": start.run_id, "attempt": start.attempt, "ok": False}
        body["why"] = why
        self._replies.append((start.reply, body))


class _Replier:
    """The gate's thread sends its answers itself, on a connection of its own, as soon as the
    gate has answered (the broker's thread may be waiting for messages). When that fails, the
    broker's thread sends them once it can."""

    RETRY_SECONDS = 1.0

    def __init__(self, launcher: CeleryLauncher) -> None:
        self.launcher = launcher
        self._conn: Any = None
        self._producer: Any = None
        self._failed_at = 0.0

    def send(self) -> None:
        if not self.launcher.connected or time.monotonic() - self._failed_at < self.RETRY_SECONDS:
            return
        try:
            self.launcher._send_replies(self._ready())
        except Exception as exc:
            logger.info("answering from the gate's thread failed (%s)", exc)
            self._failed_at = time.monotonic()
            self.close()

    def _ready(self) -> Any:
        if self._producer is None:
            from kombu import Connection, Producer

            self._conn = Connection(self.launcher.broker_url, heartbeat=0, connect_timeout=2)
            self._conn.ensure_connection(max_retries=1)
            self._producer = Producer(self._conn.channel(), exchange=control_exchange())
        return self._producer

    def close(self) -> None:
        if self._conn is not None:
            with contextlib.suppress(Exception):
                self._conn.release()
        self._conn = self._producer = None
