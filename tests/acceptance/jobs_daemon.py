"""Job definitions of the daemon's tests (integration and acceptance).

Importable as ``tests.acceptance.jobs_daemon:definitions`` by worker processes.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

from backfiller import (
    DailyPartitions,
    Definitions,
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
    jobs=[noop, steady, flaky, broken, hangs, limited, windows, daily_windows]
)
