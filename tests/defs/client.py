"""Definitions for the client tests (CLI, Python, REST, TypeScript, Go, Java): the quick
start's jobs and asset graph, a job that fails one partition, and two triggers."""

from __future__ import annotations

from backfiller import (
    BackfillRequest,
    Definitions,
    PartitionRange,
    RunContext,
    SkipReason,
    StaticPartitions,
    TriggerContext,
    job,
    trigger,
)
from backfiller.examples.assets import ASSETS
from backfiller.examples.quickstart import definitions as quickstart


@job(partitions=StaticPartitions(["fine", "broken", "also-fine"]))
def picky(context: RunContext) -> None:
    """Fails its `broken` partition, every time."""
    if context.partition_key == "broken":
        raise RuntimeError("broken on purpose")


@trigger(description="Launch the first week of May 2024 of daily_sales, once.")
def may_week(context: TriggerContext) -> BackfillRequest:
    return BackfillRequest(
        job="daily_sales",
        partitions=PartitionRange("2024-05-01", "2024-05-07"),
        title="May week",
        idempotency_key="may-week",
    )


@trigger
def quiet(context: TriggerContext) -> SkipReason:
    """Never launches anything."""
    return SkipReason("nothing landed")


definitions = Definitions(
    jobs=[*quickstart.job_list, picky], assets=ASSETS, triggers=[may_week, quiet]
)
