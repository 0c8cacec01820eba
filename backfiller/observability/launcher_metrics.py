"""Metrics of the Celery launcher's own decisions, in the daemon that runs it.

One counter, ``backfiller_launcher_republished_total{reason}``: runs the launcher published
again on the broker although they had been published once (see
``launchers/celery/dispatch.py``), by reason:

- ``overtaken``: runs published after it on its queue started while it waited, for long enough
  that a worker is taken to hold it without running it (a dead worker's prefetched task);
- ``mates``: it travelled in one task with a run whose worker was lost or stopped;
- ``undelivered``: the worker that took it gave up waiting for its daemon's answer;
- ``reconnected``: the broker connection broke before it started.

Under normal operation (no worker lost, no outage) it stays near zero: each republication is
one more message, delivery and refused start.

The counter is made on first use, like ``broker_metrics``: importing this module does not
import prometheus_client.
"""

from __future__ import annotations

from backfiller.observability.lazy_counter import LazyCounter

REASONS = ("overtaken", "mates", "undelivered", "reconnected")

_republished = LazyCounter(
    "backfiller_launcher_republished_total",
    "Runs the Celery launcher published again on the broker, by reason (overtaken, "
    "mates, undelivered, reconnected).",
    ["reason"],
)


def install() -> None:
    """Make the counter, at 0 for every reason (a launcher that republishes nothing still
    shows it, so that a scrape tells "none" from "not measured")."""
    counter = _republished.get()
    for reason in REASONS:
        counter.labels(reason)
    for what in WITHDRAWN:
        _withdrawn.get().labels(what)


def republished(reason: str, count: int = 1) -> None:
    """Count ``count`` runs published again for ``reason``."""
    if count:
        _republished.get().labels(reason).inc(count)


def republished_total() -> dict[str, float]:
    """What was counted so far, by reason (for benchmarks and tests in the same process)."""
    from prometheus_client import REGISTRY

    name = _republished.name
    found = {reason: REGISTRY.get_sample_value(name, {"reason": reason}) for reason in REASONS}
    return {reason: value for reason, value in found.items() if value}


# -- runs withdrawn (``launchers/celery/withdraw.py``) -------------------------------------------

WITHDRAWN = ("withdrawn", "refused")

_withdrawn = LazyCounter(
    "backfiller_launcher_withdrawn_total",
    "Runs the Celery launcher withdrew from the broker because they may no longer start "
    "(withdrawn: a pause, a cancel), and late deliveries of withdrawn runs it refused (refused).",
    ["what"],
)


def withdrawn(what: str, count: int = 1) -> None:
    """Count ``count`` runs withdrawn, or deliveries of withdrawn runs refused (``what``)."""
    if count:
        _withdrawn.get().labels(what).inc(count)
