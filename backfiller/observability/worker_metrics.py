"""Metrics of the processes that run jobs: the local launcher's workers, a Celery worker's pool.

A worker process records into files of prometheus-client's multiprocess mode: a local worker
in the directory its daemon made (:func:`.exposition.prepare_worker_metrics`), whose
``/metrics`` adds them up; a Celery pool process in the directory its ``backfiller worker
--metrics-port`` made, whose endpoint adds them up. The names are the same on both launchers.
:func:`start` must run before anything imports prometheus_client in a local worker (it picks
its storage at import time), so the worker calls it first thing; a Celery worker sets the
storage up before it forks its pool.
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
        self.waited = Histogram(
            "backfiller_worker_start_delay_seconds",
            "From a run's publication on the broker to its start on a Celery worker, by job.",
            ["job"],
            buckets=RUN_BUCKETS,
        )
        self.busy = Gauge(
            "backfiller_worker_busy",
            "Worker processes running a job now.",
            multiprocess_mode="livesum",
        )


_metrics: _Metrics | None = None


def start() -> None:
    """Turn metrics on in this worker process, when its daemon (or its Celery worker) asked
    for them: ``$BACKFILLER_WORKER_METRICS_DIR`` names where to record."""
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


def run_waited(job: str, seconds: float) -> None:
    """A Celery run starts ``seconds`` after its task was published."""
    if _metrics is not None:
        _metrics.waited.labels(job).observe(max(0.0, seconds))
