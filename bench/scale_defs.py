"""Definitions of the scale benchmark: 100 daily jobs (the history's), a no-op job to dispatch,
and 10 triggers (the evaluations' names)."""

from __future__ import annotations

from backfiller import (
    BackfillRequest,
    DailyPartitions,
    Definitions,
    RunContext,
    SkipReason,
    TriggerContext,
    job,
    trigger,
)

DAYS = DailyPartitions(start="2015-01-01")
JOBS = 100
TRIGGERS = 10


def _job(n: int):  # type: ignore[no-untyped-def]
    def run(context: RunContext) -> None:
        """A no-op job of the history."""

    run.__name__ = f"job_{n:03d}"
    return job(partitions=DAYS)(run)


def _trigger(n: int):  # type: ignore[no-untyped-def]
    def evaluate(context: TriggerContext) -> BackfillRequest | SkipReason:
        """Never launches: the history has its evaluations."""
        return SkipReason("nothing new upstream")

    return trigger(name=f"trigger_{n}")(evaluate)


@job(partitions=DailyPartitions(start="1990-01-01"))
def dispatch_noop(context: RunContext) -> None:
    """A no-op, for the dispatch rate."""


history_jobs = [_job(n) for n in range(JOBS)]
definitions = Definitions(
    jobs=[*history_jobs, dispatch_noop], triggers=[_trigger(n) for n in range(TRIGGERS)]
)
