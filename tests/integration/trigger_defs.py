"""Definitions with triggers for the trigger and client tests (also loaded by live servers)."""

from __future__ import annotations

import os
import time
from pathlib import Path

from backfiller import (
    BackfillRequest,
    DailyPartitions,
    Definitions,
    DynamicPartitions,
    PartitionKeys,
    PartitionRange,
    RunContext,
    SkipReason,
    StaticPartitions,
    TriggerContext,
    job,
    trigger,
)
from backfiller.definitions.triggers import TriggerResult


@job(partitions=DailyPartitions(start="2024-01-01", end="2024-02-01"))
def daily(context: RunContext) -> None:
    """A daily job of January 2024."""


@job(partitions=StaticPartitions(["a", "b", "c"]))
def letters(context: RunContext) -> None:
    """Three static partitions."""


@job(partitions=DynamicPartitions("customers"))
def customer_sync(context: RunContext) -> None:
    """One partition per customer, added through the API."""


@trigger(description="Launches the first week of January, counting its evaluations.")
def launches(context: TriggerContext) -> TriggerResult:
    context.cursor = str(int(context.cursor or "0") + 1)
    return BackfillRequest(
        job="daily",
        partitions=PartitionRange("2024-01-01", "2024-01-07"),
        title=f"evaluation {context.cursor}",
        tags={"source": "trigger"},
    )


@trigger
def skips(context: TriggerContext) -> TriggerResult:
    """The upstream is never ready."""
    context.cursor = "skipped once"
    return SkipReason("upstream export has not landed")


@trigger
def raises(context: TriggerContext) -> TriggerResult:
    context.cursor = "never saved"
    raise ValueError("the upstream table is unreadable")


@trigger(timeout_seconds=0.5)
def sleeps(context: TriggerContext) -> TriggerResult:
    time.sleep(10)
    return SkipReason("too late")


@trigger
def returns_garbage(context: TriggerContext) -> TriggerResult:
    return 42  # type: ignore[return-value]


@trigger
def refused(context: TriggerContext) -> TriggerResult:
    return [
        BackfillRequest(job="letters", partitions=PartitionKeys(["a"])),
        BackfillRequest(job="no_such_job", partitions=PartitionKeys(["a"])),
    ]


@trigger
def keyed(context: TriggerContext) -> TriggerResult:
    time.sleep(0.2)  # widen the window in which two evaluations overlap
    return BackfillRequest(
        job="letters", partitions=PartitionKeys(["a", "b"]), idempotency_key="letters-once"
    )


@trigger
def missing_letters(context: TriggerContext) -> TriggerResult:
    """Launch the letters that never ran."""
    statuses = context.partition_statuses("letters")
    if not statuses.never_ran:
        return SkipReason("every letter ran")
    return BackfillRequest(job="letters", partitions=PartitionKeys(statuses.never_ran))


@trigger
def reads_unknown_job(context: TriggerContext) -> TriggerResult:
    context.partition_statuses("no_such_job")
    return SkipReason("unreachable")


@trigger
def remembers(context: TriggerContext) -> TriggerResult:
    """Reports what it saw, so a test can check `previous_evaluations` and `now`."""
    seen = len(context.previous_evaluations)
    return SkipReason(f"seen={seen} dry_run={context.dry_run} now={context.now.isoformat()}")


@trigger(interval_seconds=60)
def every_minute(context: TriggerContext) -> TriggerResult:
    """Counts its evaluations in its cursor."""
    context.cursor = str(int(context.cursor or "0") + 1)
    return SkipReason(f"evaluation {context.cursor}")


@trigger(interval_seconds=60, timeout_seconds=0.5)
def every_minute_slow(context: TriggerContext) -> TriggerResult:
    time.sleep(1.5)
    return SkipReason("too late")


@trigger
def through_client(context: TriggerContext) -> TriggerResult:
    """Uses the client handed to triggers: launches what the server says is a job."""
    names = [j.name for j in context.client.jobs()]
    return BackfillRequest(job=names[-1], partitions=PartitionKeys(["b"]), title="via client")


@trigger
def marker(context: TriggerContext) -> TriggerResult:
    """Launches the missing letters when a marker file exists in $BACKFILLER_TEST_MARKER_DIR."""
    folder = os.environ.get("BACKFILLER_TEST_MARKER_DIR")
    if not folder or not (Path(folder) / "ready").exists():
        return SkipReason("no marker file")
    return BackfillRequest(job="letters", partitions=PartitionKeys(["c"]))


definitions = Definitions(
    jobs=[daily, letters, customer_sync],
    triggers=[
        launches,
        skips,
        raises,
        sleeps,
        returns_garbage,
        refused,
        keyed,
        missing_letters,
        reads_unknown_job,
        remembers,
        every_minute,
        every_minute_slow,
        through_client,
        marker,
    ],
)
