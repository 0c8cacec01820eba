"""Two jobs with one name."""

from backfiller import Definitions, RunContext, StaticPartitions, job


@job(partitions=StaticPartitions(["a"]), name="load")
def first(context: RunContext) -> None:
    """First."""


@job(partitions=StaticPartitions(["a"]), name="load")
def second(context: RunContext) -> None:
    """Second."""


definitions = Definitions(jobs=[first, second])
