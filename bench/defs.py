"""Definitions for the benchmarks: jobs large enough to launch a million partitions."""

from __future__ import annotations

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


definitions = Definitions(jobs=[hourly_history, single, daily_history])
