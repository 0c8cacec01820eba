"""Ranged runs: jobs that take a chunk of consecutive partitions per run (a backfill policy).

Run them with ``backfiller dev --definitions backfiller.examples.ranged:definitions``, then
launch a backfill of ``warehouse_load`` over January: its 31 days run in 5 runs (7, 7, 7, 7
and 3 days), each loading its days in one query; ``yearly_rebuild`` runs a whole selection in
one run. See docs/ranged-runs.md.
"""

from __future__ import annotations

import time

from backfiller import DailyPartitions, Definitions, RunContext, job, multi_run, single_run

DAYS = DailyPartitions(start="2024-01-01")


@job(partitions=DAYS, backfill_policy=multi_run(max_partitions_per_run=7))
def warehouse_load(context: RunContext) -> None:
    """Load up to a week of events in one bulk query."""
    context.log.info(
        "loading %d days: [%s, %s)",
        len(context.partition_keys),
        context.partition_start,
        context.partition_end,
    )
    time.sleep(0.05)


@job(partitions=DAYS, backfill_policy=single_run())
def yearly_rebuild(context: RunContext) -> None:
    """Rebuild a table from every selected day at once."""
    first, last = context.partition_keys[0], context.partition_keys[-1]
    context.log.info("rebuilding from %s to %s", first, last)
    time.sleep(0.05)


definitions = Definitions(jobs=[warehouse_load, yearly_rebuild])
