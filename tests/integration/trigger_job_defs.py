"""Definitions for the end-to-end trigger tests: a job whose run launches another backfill
through ``context.client``, a trigger on a marker file, and a one-second interval trigger."""

from __future__ import annotations

import os
from pathlib import Path

from backfiller import (
    BackfillRequest,
    Definitions,
    PartitionKeys,
    RunContext,
    SkipReason,
    StaticPartitions,
    TriggerContext,
    job,
    trigger,
)
from backfiller.client import TriggerOutcome
from backfiller.definitions.triggers import TriggerResult


@job(partitions=StaticPartitions(["x1", "x2"]))
def child(context: RunContext) -> None:
    """X: what the parent's run launches."""
    context.log.info("child %s", context.partition_key)


@job(partitions=StaticPartitions(["go"]))
def parent(context: RunContext) -> None:
    """Y: presses the button of `child_when_ready`, then launches x2 itself."""
    evaluation = context.client.evaluate_trigger("child_when_ready")
    if evaluation.outcome is not TriggerOutcome.LAUNCHED:
        raise RuntimeError(f"the trigger did not launch: {evaluation}")
    context.client.launch_backfill(
        BackfillRequest(
            job="child",
            partitions=PartitionKeys(["x2"]),
            title="launched by the parent's run",
            idempotency_key=f"parent-{context.run_id}",
        )
    )


@trigger
def child_when_ready(context: TriggerContext) -> TriggerResult:
    """Launch x1 of `child` once the upstream marker file exists."""
    folder = os.environ.get("BACKFILLER_TEST_MARKER_DIR", "")
    if not folder or not (Path(folder) / "ready").exists():
        return SkipReason("the upstream marker is not there")
    return BackfillRequest(
        job="child", partitions=PartitionKeys(["x1"]), idempotency_key="child-x1"
    )


@trigger(interval_seconds=1)
def every_second(context: TriggerContext) -> TriggerResult:
    """Counts its evaluations in its cursor."""
    context.cursor = str(int(context.cursor or "0") + 1)
    return SkipReason(f"evaluation {context.cursor}")


definitions = Definitions(jobs=[child, parent], triggers=[child_when_ready, every_second])
