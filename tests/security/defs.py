"""Definitions of the security tests: the quick start's jobs, plus one that fails inside, and two
assets (for the scopes of tokens)."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from backfiller import Definitions, RunContext, StaticPartitions, job
from backfiller.definitions.assets import asset
from backfiller.definitions.partitions import KeySpace
from backfiller.definitions.requests import AllPartitions, BackfillRequest
from backfiller.definitions.triggers import SkipReason, TriggerContext, trigger
from backfiller.examples.quickstart import definitions as quickstart

LEAK = "SELECT password FROM api_tokens WHERE 1=1 -- Traceback (most recent call last)"


class ExplodingPartitions(StaticPartitions):
    """Partitions whose key space fails: a real internal error inside a resolver."""

    def key_space(self, now: datetime, dynamic_keys: Sequence[str] = ()) -> KeySpace:
        raise RuntimeError(LEAK)


@job(partitions=ExplodingPartitions(["a"]))
def exploding(context: RunContext) -> None:
    """Never runs."""


@trigger
def launch_as_caller(context: TriggerContext) -> SkipReason:
    """Launches through its client, and says who that client acted as."""
    launched = context.client.launch_backfill(
        BackfillRequest(job="region_report", partitions=AllPartitions(), title="from a trigger")
    )
    return SkipReason(f"launched as {launched.creator}")


@asset(partitions=StaticPartitions(["a", "b"]))
def raw_clicks(context: RunContext) -> None:
    """Upstream of ``click_report``."""


@asset(partitions=StaticPartitions(["a", "b"]), deps=["raw_clicks"])
def click_report(context: RunContext) -> None:
    """Downstream of ``raw_clicks``."""


@job(partitions=StaticPartitions(["a", "b", "c"]), priority=5)
def urgent_report(context: RunContext) -> None:
    """Its backfills have priority 5 unless a launch names another."""


definitions = Definitions(
    jobs=[*quickstart.jobs, exploding, urgent_report],
    assets=[*quickstart.assets, raw_clicks, click_report],
    triggers=[*quickstart.triggers, launch_as_caller],
)
