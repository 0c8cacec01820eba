"""Definitions for the browser tests (loaded by live server and daemon processes).

``BACKFILLER_UI_TEST_DIR`` names a directory the tests control: while it holds no ``fixed``
file, ``flaky_export`` fails on its odd partitions, so a retry can be made to succeed.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

from backfiller import (
    BackfillRequest,
    DailyPartitions,
    Definitions,
    MonthlyPartitions,
    PartitionRange,
    RunContext,
    SkipReason,
    StaticPartitions,
    TriggerContext,
    asset,
    job,
    trigger,
)
from backfiller.definitions.triggers import TriggerResult


@job(partitions=DailyPartitions(start="2024-01-01", end="2024-04-01"), tags={"team": "sales"})
def daily_sales(context: RunContext) -> None:
    """Aggregate one day of sales."""
    context.log.info("aggregating sales for %s", context.partition_key)
    time.sleep(0.05)
    context.log.info("wrote 1,204 rows for %s", context.partition_key)


@job(partitions=DailyPartitions(start="2025-01-01", end="2025-02-01"), max_concurrent_runs=1)
def slow_rebuild(context: RunContext) -> None:
    """Rebuild one day of a large table: slow on purpose."""
    for step in range(4):
        context.log.info("step %d of 4 for %s", step + 1, context.partition_key)
        time.sleep(0.5)


@job(partitions=StaticPartitions([f"shard-{n:02d}" for n in range(1, 13)]))
def flaky_export(context: RunContext) -> None:
    """Export one shard to a partner; odd shards fail until the partner is fixed."""
    fixed = Path(os.environ.get("BACKFILLER_UI_TEST_DIR", "."), "fixed").exists()
    if int(context.partition_key[-2:]) % 2 and not fixed:
        raise RuntimeError(f"partner rejected {context.partition_key}")
    context.log.info("exported %s", context.partition_key)


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
    context.log.info("report for %s", context.partition_key)


@job(partitions=DailyPartitions(start="1750-01-01"))
def weather_history(context: RunContext) -> None:
    """Reprocess one day of historical weather: over 100,000 daily partitions."""
    context.log.info("day %s", context.partition_key)


@trigger(description="Launches the first week of March when the upstream export has landed.")
def march_landed(context: TriggerContext) -> TriggerResult:
    return BackfillRequest(
        job="daily_sales",
        partitions=PartitionRange("2024-03-01", "2024-03-07"),
        title="March, first week (trigger)",
        tags={"source": "trigger"},
    )


@trigger(
    cron="0 3 * * *",
    timezone="Europe/Berlin",
    description="Every night at 03:00 Berlin time: yesterday's partition.",
)
def nightly_berlin(context: TriggerContext) -> TriggerResult:
    return SkipReason(f"nothing for {context.scheduled_local_time.date()}")


@trigger(interval_seconds=3600, description="Waits for an upstream that never lands.")
def upstream_ready(context: TriggerContext) -> TriggerResult:
    return SkipReason("the upstream export has not landed yet")


# A small asset graph: daily events feed daily visits and daily signups, and a monthly report
# reads every day of its month of both (a daily -> monthly mapping).
ASSET_DAYS = DailyPartitions(start="2024-01-01", end="2024-07-01")
ASSET_MONTHS = MonthlyPartitions(start="2024-01-01", end="2024-07-01")


@asset(partitions=ASSET_DAYS, tags={"team": "web"})
def raw_events(context: RunContext) -> None:
    """Load one day of raw web events."""
    context.log.info("loading events of %s", context.partition_key)
    time.sleep(0.05)


@asset(partitions=ASSET_DAYS, deps=[raw_events])
def daily_visits(context: RunContext) -> None:
    """Sessionize one day of events into visits."""
    context.log.info("visits of %s", context.partition_key)
    time.sleep(0.05)


@asset(partitions=ASSET_DAYS, deps=[raw_events])
def daily_signups(context: RunContext) -> None:
    """Count the signups of one day."""
    context.log.info("signups of %s", context.partition_key)


@asset(partitions=ASSET_MONTHS, deps=[daily_visits, daily_signups])
def monthly_report(context: RunContext) -> None:
    """Summarize the visits and signups of every day of one month."""
    context.log.info("report of the month starting %s", context.partition_key)


definitions = Definitions(
    jobs=[daily_sales, slow_rebuild, flaky_export, region_report, weather_history],
    assets=[raw_events, daily_visits, daily_signups, monthly_report],
    triggers=[march_landed, upstream_ready, nightly_berlin],
)
