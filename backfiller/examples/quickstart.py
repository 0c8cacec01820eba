"""The quick start's definitions: a few daily, hourly and static jobs to backfill.

Run them with ``backfiller dev`` (the default) or
``backfiller serve --definitions backfiller.examples.quickstart:definitions``.
"""

from __future__ import annotations

import hashlib
import os
import time
from pathlib import Path

from backfiller import (
    BackfillRequest,
    DailyPartitions,
    Definitions,
    DynamicPartitions,
    HourlyPartitions,
    PartitionKeys,
    RetryPolicy,
    RunContext,
    SkipReason,
    StaticPartitions,
    TriggerContext,
    job,
    trigger,
)
from backfiller.examples.assets import ASSETS


def _fraction(*parts: object) -> float:
    """A stable number in [0, 1) for these parts: failures that are the same on every run."""
    digest = hashlib.sha256("/".join(map(str, parts)).encode()).digest()
    return int.from_bytes(digest[:4], "big") / 2**32


@job(partitions=DailyPartitions(start="2024-01-01"), max_concurrent_runs=8, tags={"team": "sales"})
def daily_sales(context: RunContext) -> None:
    """Aggregate one day of sales."""
    context.log.info("aggregating sales for %s", context.partition_key)
    time.sleep(0.05)


@job(partitions=HourlyPartitions(start="2026-01-01-00:00"))
def hourly_events(context: RunContext) -> None:
    """Compact one hour of raw events."""
    context.log.info("compacting events of %s", context.partition_key)
    time.sleep(0.02)


@job(
    partitions=StaticPartitions(["emea", "amer", "apac"]),
    config={
        "type": "object",
        "properties": {"currency": {"type": "string", "enum": ["EUR", "USD", "JPY"]}},
        "additionalProperties": False,
    },
)
def region_report(context: RunContext) -> None:
    """Build the report of one region, in the currency of the run config."""
    currency = context.run_config.get("currency", "USD")
    context.log.info("report for %s in %s", context.partition_key, currency)


@job(
    partitions=DailyPartitions(start="2024-01-01"),
    retry=RetryPolicy(max_retries=2, delay_seconds=1),
)
def flaky_export(context: RunContext) -> None:
    """Export a day to a partner; about one day in four fails once, one in twenty for good."""
    luck = _fraction("flaky_export", context.partition_key)
    if luck < 0.05:
        raise RuntimeError(f"partner rejected the file of {context.partition_key}")
    if luck < 0.25 and context.attempt == 1:
        raise ConnectionError("partner endpoint timed out; will retry")
    context.log.info("exported %s on attempt %d", context.partition_key, context.attempt)


@job(partitions=DailyPartitions(start="2025-01-01"), timeout_seconds=30, max_concurrent_runs=2)
def slow_rebuild(context: RunContext) -> None:
    """Rebuild a large table for one day: slow on purpose."""
    for step in range(3):
        context.log.info("step %d of 3 for %s", step + 1, context.partition_key)
        time.sleep(1)


@job(partitions=DynamicPartitions("customers"))
def customer_sync(context: RunContext) -> None:
    """Sync one customer; customers are added through the API."""
    context.log.info("syncing customer %s", context.partition_key)


LANDING_DIR_ENV = "BACKFILLER_EXAMPLE_LANDING_DIR"
# Where the example's upstream export lands when $BACKFILLER_EXAMPLE_LANDING_DIR is unset: beside
# the embedded database. `backfiller dev` lands an export there at start (land_example_export).
DEFAULT_LANDING_DIR = Path(".backfiller") / "landing"


def landing_dir() -> Path:
    return Path(os.environ.get(LANDING_DIR_ENV) or DEFAULT_LANDING_DIR)


def land_example_export() -> Path:
    """Play the upstream system: write its ``_SUCCESS`` marker unless it is already there, so
    that the first press of ``missing_sales_days`` launches a backfill."""
    marker = landing_dir() / "_SUCCESS"
    if not marker.exists():
        marker.parent.mkdir(parents=True, exist_ok=True)
        marker.touch()
    return marker


@trigger(
    description="Launch the days of daily_sales that never ran, once the upstream export has "
    f"landed (a _SUCCESS file in ${LANDING_DIR_ENV}, by default {DEFAULT_LANDING_DIR}; "
    "`backfiller dev` lands one at start)."
)
def missing_sales_days(context: TriggerContext) -> BackfillRequest | SkipReason:
    """The conditional launch: check the upstream, then launch only what is missing."""
    marker = landing_dir() / "_SUCCESS"
    if not marker.exists():
        return SkipReason(f"the upstream export has not landed yet (no {marker})")
    export = str(int(marker.stat().st_mtime))
    if context.cursor == export:
        return SkipReason("this export was already handled")
    missing = context.partition_statuses("daily_sales").never_ran
    if not missing:
        return SkipReason("every day of daily_sales already ran")
    context.cursor = export
    return BackfillRequest(
        job="daily_sales",
        partitions=PartitionKeys(missing),
        title=f"Missing sales days ({len(missing)})",
        tags={"source": "trigger", "export": export},
        idempotency_key=f"missing-sales-days-{export}",
    )


definitions = Definitions(
    jobs=[daily_sales, hourly_events, region_report, flaky_export, slow_rebuild, customer_sync],
    assets=ASSETS,
    triggers=[missing_sales_days],
)
