"""Every consumer of a Backfiller queue opens what it receives, and drops what it cannot.

A message that is not JSON (pickle, anything else), not an envelope, unsigned, signed with
another key, expired, replayed, misrouted, of an unknown kind or of the wrong shape (see
:mod:`.envelope`) is acknowledged and dropped, logged once with its queue (at most
``LOG_LINES`` lines a minute per consumer, then a count of the others) and counted in
``backfiller_broker_messages_refused_total``; the consumer keeps working. The hooks:

- :meth:`Guard.receiver`: kombu's ``Consumer(on_message=...)`` for a daemon's queue and a
  worker process's reply and lease queues (the message is decoded here, not by kombu, so that
  an undecodable one never raises in the consumer);
- :meth:`Guard.open_message`: one message got from a queue (a dead daemon's, at a takeover);
- :func:`task_strategy`: the ``backfiller.run`` task's Celery strategy, in the worker's main
  process: a task whose arguments do not open is acknowledged and never reaches a pool process;
- :func:`opened_runs`: the task's body opens its arguments again (decrypting the credentials),
  whatever called it.
"""

from __future__ import annotations

import json
import logging
import threading
import time
from collections.abc import Callable, Sequence
from typing import Any

from backfiller.launchers.celery.envelope import Opener, Refused
from backfiller.launchers.celery.protocol import LEASE_EXCHANGE
from backfiller.observability import broker_metrics

logger = logging.getLogger("backfiller.broker")

LOG_LINES = 100
"""Refusals logged a minute per consumer, at most; the others are counted in the next line."""
HINTS = {
    "bad_signature": " (is $BACKFILLER_BROKER_KEY the same on every daemon and worker?)",
    "unsigned": " (a worker or daemon without a key, or of an older release?)",
}


class Guard:
    """One consumer's checks: its :class:`Opener` (and replay cache), and its refusals' log.

    Args:
        queue_kind: the metric's ``queue_kind`` (``daemon``, ``worker``, ``lease``, ``task``),
            or a function of the message that tells it (a consumer of several queues).
    """

    def __init__(self, queue_kind: str | Callable[[Any], str]) -> None:
        self.queue_kind = queue_kind
        self.opener = Opener()
        self._lock = threading.Lock()
        self._window = 0.0
        self._logged = 0
        self._unlogged = 0

    def receiver(
        self,
        handle: Callable[[dict[str, Any], Any], None],
        drop: Callable[[Any], None] | None = None,
    ) -> Callable[[Any], None]:
        """kombu's ``on_message`` callback: ``handle(body, message)`` for a message that opens,
        ``drop(message)`` for one that does not (to acknowledge it; nothing to do when the
        consumer acknowledges as it receives)."""

        def on_message(message: Any) -> None:
            body = self.open_message(message)
            if body is not None:
                handle(body, message)
            elif drop is not None:
                drop(message)

        return on_message

    def open_message(self, message: Any, *, replay: bool = True) -> dict[str, Any] | None:
        """The message inside a kombu message, or None once refused (logged and counted)."""
        try:
            envelope = decoded(message)
            info = _delivery_info(message)
            routed = {str(v) for v in (info.get("routing_key"), info.get("exchange")) if v}
            return self.opener.open(
                envelope,
                routed=routed,
                redelivered=bool(info.get("redelivered")),
                replay=replay,
            )
        except Refused as refusal:
            self.refuse(message, refusal)
            return None

    def refuse(self, message: Any, refusal: Refused) -> None:
        kind = self.queue_kind if isinstance(self.queue_kind, str) else self.queue_kind(message)
        broker_metrics.refused(kind, refusal.reason)
        now = time.monotonic()
        with self._lock:
            if now - self._window >= 60.0:
                unlogged, self._unlogged = self._unlogged, 0
                self._window, self._logged = now, 0
                if unlogged:
                    logger.warning("%d more messages were refused on %s queues", unlogged, kind)
            self._logged += 1
            if self._logged > LOG_LINES:
                self._unlogged += 1
                return
        what = f"a message of kind {refusal.kind!r}" if refusal.kind else "a message"
        logger.warning(
            "refused %s on %s (%s queue): %s: %s%s; dropped",
            what,
            queue_of(message),
            kind,
            refusal.reason,
            refusal.detail,
            HINTS.get(refusal.reason, ""),
        )


def _delivery_info(message: Any) -> dict[str, Any]:
    info = getattr(message, "delivery_info", None)
    return info if isinstance(info, dict) else {}


def queue_of(message: Any) -> str:
    """Where a message came from, as the broker tells: its routing key (or exchange)."""
    info = _delivery_info(message)
    return str(info.get("routing_key") or info.get("exchange") or "?")[:200]


def decoded(message: Any) -> Any:
    """A kombu message's body, decoded as JSON (the only content type Backfiller sends);
    raises :class:`Refused` for anything else."""
    content_type = getattr(message, "content_type", None)
    if content_type != "application/json":
        raise Refused("undecodable", f"content type {str(content_type)[:60]!r}")
    headers = getattr(message, "headers", None) or {}
    if isinstance(headers, dict) and headers.get("compression"):
        raise Refused("undecodable", "compressed")
    body = message.body
    try:
        text = bytes(body).decode() if isinstance(body, bytes | bytearray) else str(body)
        return json.loads(text)
    except (ValueError, RecursionError):
        raise Refused("undecodable", "not JSON") from None


def worker_queue_kind(message: Any) -> str:
    """A worker process's consumer reads its reply queue and its lease queue."""
    info = _delivery_info(message)
    exchange = str(info.get("exchange") or "")
    if exchange.startswith(LEASE_EXCHANGE) or str(info.get("routing_key")).endswith(".leases"):
        return "lease"
    return "worker"


# -- the task queue ---------------------------------------------------------------------------

_task_guard: Guard | None = None


def task_guard() -> Guard:
    """The guard of this process's task consumer (made on first use)."""
    global _task_guard
    if _task_guard is None:
        _task_guard = Guard("task")
    return _task_guard


def open_task(message: Any, guard: Guard) -> bool:
    """Whether every run a task message carries opens (a Celery message of protocol 2: its
    body is ``[args, kwargs, embed]``, each argument an envelope); refused (logged and
    counted, once for the task) otherwise."""
    try:
        body = decoded(message)
        if not isinstance(body, list) or not body or not isinstance(body[0], list | tuple):
            raise Refused("malformed", "not a task of Celery's protocol 2")
        if not body[0]:
            raise Refused("malformed", "a task without runs")
        info = _delivery_info(message)
        routed = {str(v) for v in (info.get("routing_key"), info.get("exchange")) if v}
        redelivered = bool(info.get("redelivered"))
        for envelope in body[0]:
            guard.opener.open(envelope, routed=routed, redelivered=redelivered)
    except Refused as refusal:
        guard.refuse(message, refusal)
        return False
    return True


def task_strategy(task: Any, app: Any, consumer: Any, **options: Any) -> Any:
    """Celery's default strategy for ``backfiller.run``, behind a check of each message: one
    whose runs do not all open is acknowledged and dropped in the worker's main process."""
    from celery.worker.strategy import default

    handle = default(task, app, consumer, **options)
    guard = task_guard()
    errors = consumer.connection_errors

    def guarded(message: Any, body: Any, ack: Any, reject: Any, callbacks: Any, **kw: Any) -> Any:
        if not open_task(message, guard):
            ack(logger, errors)
            return None
        return handle(message, body, ack, reject, callbacks, **kw)

    return guarded


TASK_STRATEGY = f"{__name__}:task_strategy"


def watch_celery_consumer(app: Any) -> None:
    """Count (and log with their queue) the messages on a task queue that Celery's worker drops
    itself before any strategy sees them: not a task message, a task Celery does not know, or
    a body it cannot decode (Celery acknowledges or rejects each, and logs it)."""
    from celery import bootsteps, signals

    guard = task_guard()

    def rejected(message: Any = None, exc: Any = None, **kwargs: Any) -> None:
        guard.refuse(message, Refused("malformed", f"not a task message ({exc or 'no header'})"))

    def unknown(message: Any = None, name: Any = None, **kwargs: Any) -> None:
        guard.refuse(message, Refused("unknown_kind", f"no task named {str(name)[:80]!r}"))

    signals.task_rejected.connect(rejected, weak=False)
    signals.task_unknown.connect(unknown, weak=False)

    class CountDecodeErrors(bootsteps.Step):  # type: ignore[misc]
        """Wraps the consumer's handler of undecodable messages (it acknowledges them)."""

        def __init__(self, consumer: Any, **kwargs: Any) -> None:
            super().__init__(consumer, **kwargs)
            dropped = consumer.on_decode_error

            def counted(message: Any, exc: Exception) -> None:
                guard.refuse(message, Refused("undecodable", type(exc).__name__))
                dropped(message, exc)

            consumer.on_decode_error = counted

    app.steps["consumer"].add(CountDecodeErrors)


def opened_runs(envelopes: Sequence[Any]) -> list[dict[str, Any]]:
    """The runs of a task's arguments, opened (credentials decrypted) in the pool process; one
    that does not open is left out, logged and counted."""
    guard = task_guard()
    runs = []
    for envelope in envelopes:
        try:
            runs.append(guard.opener.open(envelope, replay=False))
        except Refused as refusal:
            guard.refuse(None, refusal)
    return runs
