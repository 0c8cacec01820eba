"""Metrics of the messages a daemon or a Celery worker refuses from the broker.

One counter, ``backfiller_broker_messages_refused_total{queue_kind, reason}``: every message
that a consumer of a Backfiller queue drops because it cannot be decoded, is not signed, is
signed with another key, has expired, is a replay, is of an unknown kind or has the wrong
shape (see ``launchers/celery/envelope.py``). In a daemon it is served on ``--metrics-port``;
in a Celery worker, whose pool processes refuse messages too, on the worker's own
``--metrics-port`` (prometheus-client's multiprocess mode, set up before this module is
imported).

The counter is made on first use, so that importing this module does not import
prometheus_client (a worker picks its storage when that is first imported).
"""

from __future__ import annotations

from backfiller.observability.lazy_counter import LazyCounter

QUEUE_KINDS = ("daemon", "worker", "lease", "task")
"""Where a message was refused: a daemon's queue, a worker's reply queue, the lease fanout,
or a job's task queue (Celery's worker, and the task's body)."""

_refused = LazyCounter(
    "backfiller_broker_messages_refused_total",
    "Messages from the broker refused and dropped, by queue kind (daemon, worker, "
    "lease, task) and reason (undecodable, malformed, unknown_kind, unsigned, "
    "bad_signature, expired, replayed, misrouted).",
    ["queue_kind", "reason"],
)


def refused(queue_kind: str, reason: str) -> None:
    """Count one refused message."""
    _refused.get().labels(queue_kind, reason).inc()
