"""Definitions for the client tests (CLI, TypeScript): the quick start's jobs and two triggers."""

from __future__ import annotations

from backfiller import (
    BackfillRequest,
    Definitions,
    PartitionRange,
    SkipReason,
    TriggerContext,
    trigger,
)
from backfiller.examples.quickstart import definitions as quickstart


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


definitions = Definitions(jobs=list(quickstart.job_list), triggers=[may_week, quiet])
