"""Jobs with backfill policies for the ranged-run tests: each records the ranges it ran."""

from __future__ import annotations

from datetime import datetime

from backfiller import DailyPartitions, Definitions, RetryPolicy, RunContext, job
from backfiller.definitions.policies import multi_run, single_run

DAYS = DailyPartitions(start="2024-01-01")

executions: list[tuple[str, tuple[str, ...], datetime | None, datetime | None]] = []
"""(job, partition_keys, window start, window end) of every execution, in order."""


def _record(context: RunContext) -> None:
    executions.append(
        (
            context.job_name,
            context.partition_keys,
            context.partition_start,
            context.partition_end,
        )
    )


@job(partitions=DAYS, backfill_policy=single_run())
def whole(context: RunContext) -> None:
    _record(context)


@job(partitions=DAYS, backfill_policy=multi_run(max_partitions_per_run=4))
def fours(context: RunContext) -> None:
    _record(context)


@job(partitions=DAYS, backfill_policy=multi_run(4), retry=RetryPolicy(max_retries=1))
def flaky_fours(context: RunContext) -> None:
    _record(context)
    if context.attempt == 1:
        raise RuntimeError("the first attempt of every range fails")


@job(partitions=DAYS, backfill_policy=multi_run(4), max_concurrent_runs=1)
def one_at_a_time(context: RunContext) -> None:
    _record(context)


@job(partitions=DAYS)
def plain(context: RunContext) -> None:
    _record(context)


definitions = Definitions(jobs=[whole, fours, flaky_fours, one_at_a_time, plain])
