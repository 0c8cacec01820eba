"""An example asset graph: raw daily events -> daily visits -> a monthly report, plus an
unpartitioned summary of every visit. Part of the quick start's definitions.

Launch "rebuild daily visits and everything downstream for March" with::

    backfiller launch --assets daily_visits --downstream --from 2024-03-01 --to 2024-03-31
"""

from __future__ import annotations

import time

from backfiller import (
    DailyPartitions,
    MonthlyPartitions,
    RetryPolicy,
    RunContext,
    asset,
)

DAYS = DailyPartitions(start="2024-01-01")
MONTHS = MonthlyPartitions(start="2024-01-01")


@asset(partitions=DAYS, tags={"team": "web"})
def raw_events(context: RunContext) -> None:
    """Load one day of raw web events."""
    context.log.info("loading events of %s", context.partition_key)
    time.sleep(0.05)


@asset(partitions=DAYS, deps=[raw_events], retry=RetryPolicy(max_retries=2))
def daily_visits(context: RunContext) -> None:
    """Sessionize one day of events into visits."""
    context.log.info("visits of %s", context.partition_key)
    time.sleep(0.05)


@asset(partitions=MONTHS, deps=[daily_visits])
def monthly_report(context: RunContext) -> None:
    """Summarize the visits of every day of one month."""
    context.log.info("report of the month starting %s", context.partition_key)


@asset(deps=[monthly_report])
def visits_summary(context: RunContext) -> None:
    """An unpartitioned all-time summary, rebuilt from every monthly report."""
    context.log.info("rebuilding the all-time summary")


ASSETS = [raw_events, daily_visits, monthly_report, visits_summary]
