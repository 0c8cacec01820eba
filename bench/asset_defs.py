"""Definitions of the asset benchmark: a 10-level chain of no-op daily assets."""

from __future__ import annotations

from backfiller import DailyPartitions, Definitions, RunContext, asset
from backfiller.definitions.assets import AssetDefinition

DAYS = DailyPartitions(start="2000-01-01", end="2030-01-01")
LEVELS = 10


def _noop(context: RunContext) -> None:
    """Does nothing: measures the service, not the asset."""


def _level(i: int) -> AssetDefinition:
    deps = [f"level{i - 1}"] if i else []
    return asset(name=f"level{i}", partitions=DAYS, deps=deps)(_noop)


definitions = Definitions(assets=[_level(i) for i in range(LEVELS)])
