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

A message that reports something to write (a run's end, its log lines) is acknowledged only
once the daemon has it in the database (``recorded``), on both brokers: a daemon that dies in
between leaves it on the broker, where the takeover finds it (RabbitMQ gives back what a closed
connection did not acknowledge; on Redis, Backfiller does, see :mod:`.acks`). Other messages
are acknowledged when received. An end of a run reported lost meanwhile is reported all the
same: it may still be the run's outcome (see :mod:`.inbox`).

The parts: :mod:`.dispatch` (publishing tasks), :mod:`.grants` (start requests and the gate),
:mod:`.inbox` and :mod:`.acks` (what workers report, and when it is acknowledged),
:mod:`.liveness` (lease announcements, silent runs), :mod:`.results` (a dead daemon's queue).

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
from collections.abc import Callable, Iterable, Sequence
from datetime import datetime
from typing import Any

from backfiller.clock import utc_now
from backfiller.definitions.loading import Definitions
from backfiller.launchers.base import Gate, LauncherEvent, Outcome, RunFinished, RunTask
from backfiller.launchers.celery.acks import Acks, give_back_unacked, is_redis, reader_options
from backfiller.launchers.celery.app import control_exchange, lease_exchange, make_app, owner_queue
from backfiller.launchers.celery.dispatch import RUNS_PER_TASK, Dispatch
from backfiller.launchers.celery.grants import Grants, send_replies
from backfiller.launchers.celery.inbox import Inbox
from backfiller.launchers.celery.liveness import Liveness
from backfiller.launchers.celery.poison import Guard
from backfiller.launchers.celery.protocol import daemon_queue, default_queue
from backfiller.launchers.celery.results import KeptResults
from backfiller.launchers.celery.state import DaemonRun, Shared
from backfiller.observability import launcher_metrics

logger = logging.getLogger("backfiller.launcher")

POLL_SECONDS = 0.02
MAX_BATCH = 1_000


class CeleryLauncher:
    """Runs on Celery workers, on any number of machines, through ``broker_url``.

    Implements the core launcher protocol and the ``LeasedLauncher`` and ``DurableResults``
    capabilities (``launchers.base``).

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

    keeps_every_sign = True
    """Its durable results hold every sign that a dead daemon's run executed (a heartbeat, a
    log line, an end: workers send them to the dead daemon's queue until they kill the run at
    its ``stop_by``), so a takeover takes a run with no start written and no such sign back as
    never started (``daemon.lease.take_over``)."""

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
        self.max_active = max_active or 256
        self.grace_seconds = grace_seconds
        self.heartbeat_timeout = heartbeat_timeout
        self.api_url = api_url
        self.default_queue = default_queue()
        self.app = make_app(broker_url)
        self.shared = Shared(owner=owner, heartbeat_timeout=heartbeat_timeout)
        self.dispatch = Dispatch(self.shared, self.app, runs_per_task, grace_seconds)
        self.grants = Grants(self.shared, broker_url)
        self.acks = Acks(self.shared, cumulative=not is_redis(broker_url))
        self.inbox = Inbox(self.shared, self.acks)
        self.guard = Guard("daemon")
        self.liveness = Liveness(self.shared)
        self.kept = KeptResults(broker_url)
        self._thread: threading.Thread | None = None
        launcher_metrics.install()

    # -- the daemon's side ---------------------------------------------------------------------

    def start(self) -> CeleryLauncher:
        self._thread = threading.Thread(target=self._run, name="celery-launcher", daemon=True)
        self._thread.start()
        threading.Thread(target=self.grants.run, name="celery-launcher-gate", daemon=True).start()
        return self

    @property
    def owner(self) -> str | None:
        return self.shared.owner

    @property
    def connected(self) -> bool:
        return self.shared.connected_at is not None

    @property
    def capacity(self) -> int:
        with self.shared.lock:
            return max(0, self.max_active - len(self.shared.runs))

    def submit(self, tasks: Iterable[RunTask]) -> None:
        shared = self.shared
        with shared.lock:
            owner = shared.owner
            for task in tasks:
                job = self.definitions.get_job(task.job_name)
                queue = (job.queue if job is not None else None) or self.default_queue
                run = DaemonRun(task, queue, owner or "")
                if owner is None:  # the lease was lost meanwhile: it never leaves
                    shared.finish(run, Outcome.NOT_STARTED, "not started: no lease")
                    continue
                shared.runs[task.run_id] = run
                shared.unpublished.append(run)
            shared.signal()

    def poll(self) -> list[LauncherEvent]:
        with self.shared.lock:
            events, self.shared.events = self.shared.events, []
        return events

    def active(self) -> dict[int, RunTask]:
        with self.shared.lock:
            return {run_id: run.task for run_id, run in self.shared.runs.items()}

    def ready_workers(self) -> int:
        """Celery worker processes heard from (start requests, heartbeats, ends) within the
        heartbeat timeout: those at work for this daemon, an idle one is not seen."""
        with self.shared.lock:
            return self.shared.live_workers()

    def set_notify(self, callback: Callable[[], None] | None) -> None:
        self.shared.notify = callback

    def set_gate(self, gate: Gate | None) -> None:
        self.shared.gate = gate

    @property
    def queue_name(self) -> str | None:
        """The queue workers report to (None until the daemon gives its owner)."""
        owner = self.shared.owner
        return None if owner is None else daemon_queue(owner)

    def extend_lease(self, owner: str, stop_by: datetime) -> None:
        with self.shared.lock:
            if owner != self.shared.owner:
                self.shared.owner = owner  # a new daemon's name (after revoke_lease): a new queue
            self.shared.lease_stop_by = stop_by.timestamp()

    def revoke_lease(self) -> list[RunTask]:
        """Stop every run now and forget them all; leave the owner's queue to the takeover.

        The runs are announced dropped (their workers stop them at once, as lost), not
        canceled: a run's end that reaches the queue is then its true outcome for the daemon
        taking the runs over.
        """
        shared = self.shared
        with shared.lock:
            tasks = [run.task for run in shared.runs.values()]
            self.liveness.farewell()
            shared.lease_stop_by = time.time()
            shared.runs.clear()
            shared.unpublished.clear()
            shared.owner = None  # stop consuming its queue now; the next lease names the new one
            self.acks.give_back_held()
        return tasks

    def durable_results(self, owner: str, run_ids: Iterable[int]) -> list[LauncherEvent]:
        """What ``owner``'s workers reported while no daemon read its queue (see ``results``)."""
        if owner == self.shared.owner:
            return []
        return self.kept.results(owner, run_ids)

    def discard_results(self, owner: str, run_ids: Iterable[int]) -> None:
        if owner != self.shared.owner:
            self.kept.discard(owner, run_ids)

    def recorded(self, events: Sequence[LauncherEvent]) -> None:
        """Acknowledge the messages whose every event is now in the database."""
        with self.shared.lock:
            self.acks.recorded(events)
            if self.shared.late_runs:
                for event in events:
                    if isinstance(event, RunFinished):
                        self.shared.late_recorded(event.run_id)

    def forget_owner(self, owner: str) -> None:
        """``owner`` is wholly taken over: delete its queue."""
        if owner != self.shared.owner:
            self.kept.forget(owner)

    def cancel(self, run_ids: Iterable[int]) -> None:
        shared = self.shared
        with shared.lock:
            for run_id in run_ids:
                run = shared.runs.get(run_id)
                if run is None:
                    continue
                if run.reply is None:
                    # Not started: refused when a worker asks to start it.
                    del shared.runs[run_id]
                    shared.finish(run, Outcome.CANCELED, "canceled")
                elif run.cancel_at is None:
                    run.cancel_at = time.monotonic() + self.grace_seconds
                    shared.send_cancel(run)
            shared.signal()

    def close(self, timeout: float = 10.0) -> list[LauncherEvent]:
        """Stop the runs in flight, wait until they surely stopped, and report them lost."""
        shared = self.shared
        with shared.lock:
            for run in shared.runs.values():
                if run.reply is not None:
                    shared.send_cancel(run)
                    run.dropped = Outcome.WORKER_LOST
        deadline = time.monotonic() + max(timeout, self.heartbeat_timeout / 2 + 2)
        while time.monotonic() < deadline:
            with shared.lock:
                if all(r.reply is None for r in shared.runs.values()):
                    break
            time.sleep(0.05)
        with shared.lock:
            lost: list[LauncherEvent] = shared.events + [
                RunFinished(
                    r.task.run_id,
                    utc_now(),
                    Outcome.WORKER_LOST,
                    "the daemon stopped",
                    attempt=r.task.attempt,
                )
                for r in shared.runs.values()
            ]
            shared.events = []
            shared.runs.clear()
            shared.lease_stop_by = 0.0
            self.liveness.last_announce = 0.0
        time.sleep(2 * POLL_SECONDS + 0.1)  # one last announcement: this owner is gone
        shared.closing = True
        if self._thread is not None:
            self._thread.join(timeout)
        self.kept.close()
        return lost

    # -- the broker's thread -------------------------------------------------------------------

    def _run(self) -> None:
        from kombu import Connection

        delay = 0.5
        while not self.shared.closing:
            try:
                # No publisher confirms (each would wait one broker round trip): a task lost
                # with a broken connection is published again after reconnecting (it never
                # started: the daemon saw no start request), and a lost answer is asked again.
                options = reader_options(self.broker_url)
                with Connection(self.broker_url, heartbeat=10, **options) as conn:
                    conn.ensure_connection(max_retries=1)
                    self._serve(conn)
                    return
            except Exception as exc:
                with self.shared.lock:
                    if self.shared.connected_at is not None:
                        logger.warning("broker connection lost (%s); reconnecting", exc)
                    self.shared.connected_at = None
                    self.dispatch.republish_all()
                time.sleep(delay)
                delay = min(5.0, delay * 2)

    def _serve(self, conn: Any) -> None:
        from kombu import Producer

        channel = conn.channel()
        control = Producer(channel, exchange=control_exchange())
        leases = Producer(channel, exchange=lease_exchange())
        tasks = Producer(channel)
        with self.shared.lock:
            self.shared.connected_at = time.monotonic()
            self.acks.reset()
        consumer: Any = None
        serving: str | None = None
        try:
            while not self.shared.closing:
                if self.shared.owner != serving:
                    consumer, serving = self._consume(channel, consumer, self.shared.owner)
                self._pass(conn, consumer, channel, (tasks, control, leases))
            if consumer is not None and serving is not None:
                consumer.cancel()
                # A clean stop: this daemon's runs are requeued by itself, nobody reads it.
                owner_queue(serving)(channel).delete()
        finally:
            with contextlib.suppress(Exception):
                if consumer is not None:
                    consumer.cancel()

    def _pass(self, conn: Any, consumer: Any, channel: Any, producers: tuple[Any, ...]) -> None:
        """One pass of the broker's thread: publish, answer, announce, watch, receive, settle."""
        tasks, control, leases = producers
        more = self.dispatch.publish(tasks)
        send_replies(self.shared, control)
        self.liveness.announce(leases)
        self.liveness.watch()
        self._drain(conn, consumer, 0.001 if more else POLL_SECONDS)
        self.acks.settle(channel)
        with self.shared.lock:
            self.shared.signal()

    def _consume(self, channel: Any, consumer: Any, owner: str | None) -> tuple[Any, str | None]:
        """Stop consuming the former owner's queue (it stays, for the takeover) and consume
        ``owner``'s."""
        from kombu import Consumer

        if consumer is not None:
            consumer.cancel()
        if owner is None:
            return None, None
        on_message = self.guard.receiver(self.inbox.on_message, self.inbox.drop)
        queue = owner_queue(owner)(channel)
        queue.declare()
        # What an earlier connection took and did not acknowledge (Redis) comes back first.
        given = give_back_unacked(channel, queue.name)
        if given:
            logger.info("%d unacknowledged messages of %s put back on it", given, queue.name)
        if is_redis(self.broker_url):
            from backfiller.launchers.celery.redis_transport import Taker

            return Taker(channel, queue, on_message), owner
        consumer = Consumer(channel, [queue], on_message=on_message, accept=["json"])
        consumer.no_ack = False
        consumer.consume()
        return consumer, owner

    def _drain(self, conn: Any, consumer: Any, timeout: float) -> None:
        if consumer is None:
            time.sleep(timeout)  # no owner yet: nothing to receive
            return
        began = time.monotonic()
        take = getattr(consumer, "take", None)  # Redis: a ``redis_transport.Taker``
        for _ in range(MAX_BATCH):
            if take is not None:
                received = take(timeout)
            else:
                try:
                    conn.drain_events(timeout=timeout)
                    received = True
                except TimeoutError:
                    received = False
            if not received:
                self.shared.drained_at = began  # read up to here: silence is judged from it
                return
            timeout = 0.001
