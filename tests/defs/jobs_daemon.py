"""Job definitions of the daemon's tests (integration and acceptance).

Importable as ``tests.defs.jobs_daemon:definitions`` by worker processes.
"""

from __future__ import annotations

import fcntl
import os
import subprocess
import time
from pathlib import Path

from backfiller import (
    DailyPartitions,
    Definitions,
    HourlyPartitions,
    RetryPolicy,
    RunContext,
    StaticPartitions,
    job,
)

DAYS = DailyPartitions(start="2000-01-01", end="2030-01-01")
SECONDS = {
    "type": "object",
    "properties": {"seconds": {"type": "number", "minimum": 0}},
    "additionalProperties": False,
}


def _mark(context: RunContext) -> None:
    """Append one line per execution to ``$BACKFILLER_TEST_MARKS`` (when set)."""
    folder = os.environ.get("BACKFILLER_TEST_MARKS")
    if folder:
        with open(Path(folder) / f"{os.getpid()}.log", "a") as f:
            f.write(f"{context.job_name} {context.partition_key} {context.attempt}\n")


def _record(context: RunContext) -> None:
    """Record one execution in ``$BACKFILLER_TEST_MARKS``: a start line, an end line, and an
    exclusive lock per (job, partition) held in between, so an overlap is caught as it happens.
    """
    seconds = float(context.run_config.get("seconds", 0.0))
    folder = os.environ.get("BACKFILLER_TEST_MARKS")
    if not folder:
        time.sleep(seconds)
        return
    locks = Path(folder) / "locks"
    locks.mkdir(exist_ok=True)
    fd = os.open(locks / f"{context.job_name}.{context.partition_key}", os.O_CREAT | os.O_RDWR)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        overlap = ""
    except BlockingIOError:
        overlap = " OVERLAP"
    marks = Path(folder) / f"{os.getpid()}.marks"
    what = f"{context.job_name} {context.partition_key} {context.run_id} {context.backfill_id}"
    with open(marks, "a") as f:
        f.write(f"start {time.time():.6f} {what}{overlap}\n")
    time.sleep(seconds)
    with open(marks, "a") as f:
        f.write(f"end {time.time():.6f} {what}\n")
    os.close(fd)


@job(partitions=DAYS, config=SECONDS)
def recorded(context: RunContext) -> None:
    """Sleeps ``run_config.seconds`` and records the execution (see ``_record``)."""
    _record(context)


@job(partitions=HourlyPartitions(start="2000-01-01-00:00", end="2020-01-01-00:00"), config=SECONDS)
def recorded_hourly(context: RunContext) -> None:
    """``recorded`` over hours (175,320 of them): room for a backfill of 100,000 partitions."""
    _record(context)


@job(partitions=DAYS, config=SECONDS, max_concurrent_runs=3)
def recorded_capped(context: RunContext) -> None:
    """``recorded`` with at most three runs at once, whatever the backfills."""
    _record(context)


@job(partitions=DAYS, timeout_seconds=1.0)
def with_children(context: RunContext) -> None:
    """Starts two ``sleep 30`` child processes, notes their pids, and outlives its timeout."""
    children = [subprocess.Popen(["sleep", "30"]) for _ in range(2)]
    folder = os.environ.get("BACKFILLER_TEST_MARKS")
    if folder:
        with open(Path(folder) / "children", "a") as f:
            f.write("".join(f"{c.pid}\n" for c in children))
    time.sleep(60)


@job(partitions=DAYS)
def noop(context: RunContext) -> None:
    """Does nothing: measures the service, not the job."""


@job(partitions=DAYS, retry=RetryPolicy(max_retries=3), config=SECONDS)
def steady(context: RunContext) -> None:
    """Sleeps ``run_config.seconds`` (default 0.02 s), logs, and marks each execution."""
    context.log.info("processing %s", context.partition_key)
    time.sleep(float(context.run_config.get("seconds", 0.02)))
    _mark(context)


@job(partitions=DAYS, retry=RetryPolicy(max_retries=1))
def flaky(context: RunContext) -> None:
    """Fails the first attempt of even days; the retry succeeds."""
    if context.attempt == 1 and int(context.partition_key[-2:]) % 2 == 0:
        raise ConnectionError(f"flaky failure of {context.partition_key}")
    context.log.info("ok on attempt %d", context.attempt)


@job(partitions=DAYS, retry=RetryPolicy(max_retries=1))
def broken(context: RunContext) -> None:
    """Always raises: ends FAILED after its retry."""
    context.log.warning("about to fail")
    raise ValueError(f"cannot process {context.partition_key}")


@job(partitions=DAYS, timeout_seconds=1.0)
def hangs(context: RunContext) -> None:
    """Runs far past its timeout."""
    context.log.info("hanging")
    time.sleep(60)


@job(partitions=DAYS, max_concurrent_runs=2, config=SECONDS)
def limited(context: RunContext) -> None:
    """At most two runs at once, whatever the backfills."""
    time.sleep(float(context.run_config.get("seconds", 0.0)))


@job(partitions=StaticPartitions(["a", "b", "c"]))
def windows(context: RunContext) -> None:
    """Logs what the context carries."""
    context.log.info(
        "key=%s start=%s end=%s tags=%s",
        context.partition_key,
        context.partition_start,
        context.partition_end,
        dict(context.tags),
    )


@job(partitions=DAYS)
def daily_windows(context: RunContext) -> None:
    """Logs the time window of its partition."""
    context.log.info("window %s %s", context.partition_start, context.partition_end)


definitions = Definitions(
    jobs=[
        noop,
        steady,
        flaky,
        broken,
        hangs,
        limited,
        windows,
        daily_windows,
        recorded,
        recorded_hourly,
        recorded_capped,
        with_children,
    ]
)
