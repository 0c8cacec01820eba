"""Metrics of the daemon: its tasks, claims, dispatch, runs, launcher, and the database's view.

The call sites are one line each (``daemon_metrics.observe_task(...)`` and the like); the
database-wide gauges (backfills by status, runs queued and running, lag) are refreshed by
:func:`refresh_from_database`, a task the daemon runs every few seconds.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Protocol

from prometheus_client import Counter, Gauge, Histogram

from backfiller.domain import BackfillState, Outcome, RunFinished
from backfiller.observability import db_metrics, tracing
from backfiller.storage.engine import Database
from backfiller.storage.stats import backfill_stats

TASK_DURATION = Histogram(
    "backfiller_daemon_task_duration_seconds",
    "Time one pass of a daemon task took (plan, launch, results, steer, complete, lease, ...).",
    ["task"],
    buckets=(0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0),
)
TASK_FAILURES = Counter(
    "backfiller_daemon_task_failures_total", "Daemon task passes that raised.", ["task"]
)
LAST_TICK = Gauge(
    "backfiller_daemon_last_tick_timestamp_seconds",
    "When the daemon's loop last finished a task (Unix time).",
)
LAG = Gauge(
    "backfiller_daemon_lag_seconds",
    "Age of the oldest planned partition that could run now and waits (0 when none waits).",
)
CLAIM_DURATION = Histogram(
    "backfiller_daemon_claim_duration_seconds",
    "Time of one claim transaction (slots of one backfill to QUEUED runs).",
    buckets=(0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0),
)
DISPATCH_LATENCY = Histogram(
    "backfiller_daemon_dispatch_latency_seconds",
    "From a run's claim to its start on a worker.",
    buckets=(0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0),
)
RUNS = Counter(
    "backfiller_daemon_runs_total",
    "Runs of this daemon, by what happened: claimed, started (on a worker), succeeded, failed, "
    "retried, canceled, lost (requeued after their daemon was lost).",
    ["event"],
)
RUN_FAILURES = Counter(
    "backfiller_daemon_run_failures_total",
    "Failed runs reported by the launcher, by reason (error, timeout, worker_lost).",
    ["reason"],
)
BACKFILLS_FINISHED = Counter(
    "backfiller_daemon_backfills_finished_total",
    "Backfills this daemon brought to an end, by final status.",
    ["status"],
)
BACKFILLS = Gauge(
    "backfiller_backfills",
    "Backfills in the database, by status (refreshed by the daemon every few seconds).",
    ["status"],
)
PARTITIONS = Gauge(
    "backfiller_active_partitions",
    "Partitions of unfinished backfills, by state (pending, queued, running).",
    ["state"],
)
LAUNCHER_CAPACITY = Gauge("backfiller_launcher_capacity_runs", "Runs the launcher would take now.")
LAUNCHER_ACTIVE = Gauge(
    "backfiller_launcher_active_runs", "Runs handed to the launcher and not finished."
)
LAUNCHER_BACKLOG = Gauge(
    "backfiller_launcher_backlog_runs", "Runs handed to the launcher that no worker started yet."
)
LAUNCHER_WORKERS = Gauge(
    "backfiller_launcher_workers_ready", "Worker processes started and ready for runs."
)

db_metrics.install()

_EVENTS = ("claimed", "succeeded", "failed", "retried", "canceled", "lost")
_TASK_EVENTS = (
    ("completed_backfills", "completed"),
    ("failed_backfills", "failed"),
    ("canceled_backfills", "canceled"),
)
MAX_TRACKED = 100_000


@dataclass
class _Tracker:
    """Runs between claim and start (for the dispatch latency), and runs started."""

    submitted: dict[int, float] = field(default_factory=dict)
    running: set[int] = field(default_factory=set)
    last_ok: dict[str, float] = field(default_factory=dict)
    lock: threading.Lock = field(default_factory=threading.Lock)


_tracker = _Tracker()

# Bound children, looked up once (``.labels(...)`` costs more than recording): task names,
# run events, failure reasons and statuses are small fixed sets.
_task_durations: dict[str, Any] = {}
_runs: dict[str, Any] = {}
_failures: dict[str, Any] = {}
_finished: dict[str, Any] = {}


def _child(cache: dict[str, Any], metric: Any, label: str) -> Any:
    child = cache.get(label)
    if child is None:
        child = cache[label] = metric.labels(label)
    return child


def observe_task(name: str, seconds: float, ok: bool) -> None:
    """One pass of a daemon task (called by the loop)."""
    _child(_task_durations, TASK_DURATION, name).observe(seconds)
    now = time.time()
    LAST_TICK.set(now)
    if ok:
        _tracker.last_ok[name] = now
    else:
        TASK_FAILURES.labels(name).inc()


def seconds_since_ok(task: str) -> float | None:
    """Seconds since ``task`` last passed without raising (None: never)."""
    at = _tracker.last_ok.get(task)
    return None if at is None else time.time() - at


def seconds_since_tick() -> float | None:
    at = max(_tracker.last_ok.values(), default=None)
    return None if at is None else time.time() - at


def observe_claim(seconds: float) -> None:
    CLAIM_DURATION.observe(seconds)


def runs_submitted(run_ids: Iterable[int]) -> None:
    """Runs handed to the launcher just after their claim."""
    now = time.time()
    with _tracker.lock:
        if len(_tracker.submitted) > MAX_TRACKED:
            _tracker.submitted.clear()
        for run_id in run_ids:
            _tracker.submitted[run_id] = now


def observe_runs(started: Iterable[tuple[int, datetime]], finished: Iterable[RunFinished]) -> None:
    """What the launcher reported, as the daemon passes it on: starts (run id and start time,
    for the dispatch latency) and ends (failure reasons). The daemon sorts the launcher's
    events, so this module never imports the launchers (which report to it)."""
    failing = (Outcome.ERROR, Outcome.TIMEOUT, Outcome.WORKER_LOST)
    count = 0
    latencies: list[float] = []
    with _tracker.lock:
        for run_id, at in started:
            count += 1
            submitted = _tracker.submitted.pop(run_id, None)
            if submitted is not None:
                latencies.append(at.timestamp() - submitted)
            if len(_tracker.running) < MAX_TRACKED:
                _tracker.running.add(run_id)
        for event in finished:
            _tracker.submitted.pop(event.run_id, None)
            _tracker.running.discard(event.run_id)
            tracing.end_run(event.run_id, event.outcome.value)
            if event.outcome in failing:
                _child(_failures, RUN_FAILURES, event.outcome.value).inc()
    # Recorded once for the batch, outside the tracker's lock.
    if count:
        _child(_runs, RUNS, "started").inc(count)
    for seconds in latencies:
        DISPATCH_LATENCY.observe(max(0.0, seconds))


def observe_report(report: Any) -> None:
    """Count what a tick's report says it wrote (a ``TickReport``)."""
    for name in _EVENTS:
        n = getattr(report, name, 0)
        if n:
            _child(_runs, RUNS, name).inc(n)
    for name, status in _TASK_EVENTS:
        n = getattr(report, name, 0)
        if n:
            _child(_finished, BACKFILLS_FINISHED, status).inc(n)


class _LauncherView(Protocol):
    @property
    def capacity(self) -> int: ...

    def active(self) -> dict[int, Any]: ...


def watch_launcher(launcher: _LauncherView) -> None:
    """Gauges read from the launcher at each scrape."""
    LAUNCHER_CAPACITY.set_function(lambda: launcher.capacity)
    LAUNCHER_ACTIVE.set_function(lambda: len(launcher.active()))

    def backlog() -> float:
        active = launcher.active()
        with _tracker.lock:
            started = sum(1 for r in active if r in _tracker.running)
        return len(active) - started

    LAUNCHER_BACKLOG.set_function(backlog)
    ready: Callable[[], int] | None = getattr(launcher, "ready_workers", None)
    if ready is not None:
        LAUNCHER_WORKERS.set_function(ready)


async def refresh_from_database(database: Database, now: datetime) -> None:
    """Backfills by status, partitions of unfinished backfills by state, and the lag."""
    async with database.read() as session:
        stats = await backfill_stats(session, now)
    for status in BackfillState:
        BACKFILLS.labels(status.value).set(stats.by_status.get(status, 0))
    for name, value in (
        ("pending", stats.pending),
        ("queued", stats.queued),
        ("running", stats.running),
    ):
        PARTITIONS.labels(name).set(value)
    oldest = stats.oldest_waiting
    LAG.set(max(0.0, (now - oldest).total_seconds()) if oldest is not None else 0.0)
