"""Assets with backfill policies for the ranged asset tests: each records what it ran."""

from __future__ import annotations

from backfiller import DailyPartitions, Definitions, RunContext, asset, multi_run, single_run

DAYS = DailyPartitions(start="2024-01-01")

executions: list[tuple[str, tuple[str, ...]]] = []
"""(asset, partition_keys) of every execution, in order."""


def _record(context: RunContext) -> None:
    executions.append((context.job_name, context.partition_keys))


@asset(partitions=DAYS)
def raw(context: RunContext) -> None:
    _record(context)


@asset(partitions=DAYS, deps=["raw"], backfill_policy=multi_run(max_partitions_per_run=4))
def loaded(context: RunContext) -> None:
    _record(context)


@asset(partitions=DAYS, deps=["loaded"])
def report(context: RunContext) -> None:
    _record(context)


@asset(partitions=DAYS, backfill_policy=single_run())
def rebuilt(context: RunContext) -> None:
    _record(context)


@asset(partitions=DAYS, deps=["rebuilt"])
def checked(context: RunContext) -> None:
    _record(context)


definitions = Definitions(assets=[raw, loaded, report, rebuilt, checked])
