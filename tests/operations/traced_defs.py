"""A job that opens a span of its own, importable by worker processes."""

from __future__ import annotations

from opentelemetry import trace

from backfiller import DailyPartitions, Definitions, RunContext, job


@job(partitions=DailyPartitions(start="2000-01-01", end="2030-01-01"))
def traced(context: RunContext) -> None:
    with trace.get_tracer("user-code").start_as_current_span("user work"):
        context.log.info("working on %s", context.partition_key)


definitions = Definitions(jobs=[traced])
