"""Definitions for the benchmarks: jobs large enough to launch a million partitions."""

from __future__ import annotations

import time

from backfiller import (
    DailyPartitions,
    Definitions,
    HourlyPartitions,
    RunContext,
    StaticPartitions,
    job,
)


@job(partitions=HourlyPartitions(start="1900-01-01-00:00"))
def hourly_history(context: RunContext) -> None:
    """A no-op over more than a million hourly partitions."""


@job(partitions=StaticPartitions(["only"]))
def single(context: RunContext) -> None:
    """A no-op with one partition."""


@job(partitions=DailyPartitions(start="2000-01-01"))
def daily_history(context: RunContext) -> None:
    """A no-op over the days since 2000-01-01 (the key-list benchmark's job)."""


SECONDS = {
    "type": "object",
    "properties": {"seconds": {"type": "number", "minimum": 0}},
    "additionalProperties": False,
}


@job(partitions=HourlyPartitions(start="1900-01-01-00:00"), config=SECONDS)
def hourly_sleep(context: RunContext) -> None:
    """Sleeps ``seconds`` (run config) over the same partitions (runs that take some time)."""
    time.sleep(float(context.run_config.get("seconds", 0.0)))


definitions = Definitions(jobs=[hourly_history, single, daily_history, hourly_sleep])
