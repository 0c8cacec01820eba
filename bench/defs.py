"""Definitions for the benchmarks: jobs large enough to launch a million partitions."""

from __future__ import annotations

from backfiller import Definitions, HourlyPartitions, RunContext, StaticPartitions, job


@job(partitions=HourlyPartitions(start="1900-01-01-00:00"))
def hourly_history(context: RunContext) -> None:
    """A no-op over more than a million hourly partitions."""


@job(partitions=StaticPartitions(["only"]))
def single(context: RunContext) -> None:
    """A no-op with one partition."""


definitions = Definitions(jobs=[hourly_history, single])
