"""Metrics of the local launcher's worker processes, aggregated by their daemon.

A worker records into files of prometheus-client's multiprocess mode, in the directory its
daemon made (:func:`backfiller.observability.exposition.prepare_worker_metrics`); the daemon's
``/metrics`` adds them up. :func:`start` must run before anything imports prometheus_client in
the worker (it picks its storage at import time), so the worker calls it first thing.
"""

from __future__ import annotations

import os
import threading
import time
from typing import Any

# Not imported from .exposition: that module imports prometheus_client.
MULTIPROC_VARIABLE = "PROMETHEUS_MULTIPROC_DIR"
WORKER_DIR_VARIABLE = "BACKFILLER_WORKER_METRICS_DIR"

HEARTBEAT_SECONDS = 1.0
RUN_BUCKETS = (0.01, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 300.0, 1800.0, 3600.0)


class _Metrics:
    def __init__(self) -> None:
        from prometheus_client import Counter, Gauge, Histogram

        self.runs = Counter(
            "backfiller_worker_runs_total",
            "Runs executed by worker processes, by job and outcome (success, error).",
            ["job", "outcome"],
        )
        self.duration = Histogram(
            "backfiller_worker_run_duration_seconds",
            "Time a job took on a worker, by job.",
            ["job"],
            buckets=RUN_BUCKETS,
        )
        self.heartbeat = Gauge(
            "backfiller_worker_heartbeat_timestamp_seconds",
            "When each live worker process last beat (Unix time), by pid.",
            multiprocess_mode="liveall",
        )
        self.busy = Gauge(
            "backfiller_worker_busy",
            "Worker processes running a job now.",
            multiprocess_mode="livesum",
        )


_metrics: _Metrics | None = None


def start() -> None:
    """Turn metrics on in this worker process, when its daemon asked for them."""
    global _metrics
    path = os.environ.get(WORKER_DIR_VARIABLE)
    if not path or _metrics is not None:
        return
    os.environ[MULTIPROC_VARIABLE] = path
    _metrics = _Metrics()
    beat = _metrics.heartbeat

    def heartbeat() -> None:
        while True:
            beat.set(time.time())
            time.sleep(HEARTBEAT_SECONDS)

    threading.Thread(target=heartbeat, name="metrics-heartbeat", daemon=True).start()


def run_started() -> float:
    if _metrics is not None:
        _metrics.busy.inc()
    return time.perf_counter()


def run_finished(job: str, outcome: Any, began: float) -> None:
    if _metrics is None:
        return
    _metrics.busy.dec()
    _metrics.runs.labels(job, str(getattr(outcome, "value", outcome))).inc()
    _metrics.duration.labels(job).observe(time.perf_counter() - began)
