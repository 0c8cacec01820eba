"""Asset graphs of the asset backfills' acceptance tests: a diamond, a 10-level chain and a
daily -> monthly report. Every execution appends ``start`` and ``end`` lines (with a monotonic
nanosecond clock, shared by all processes of the machine) to ``$BACKFILLER_TEST_MARKS``; a
partition listed in ``$BACKFILLER_TEST_FAIL`` (``asset/key,...``) fails every attempt.

Importable as ``tests.defs.assets:definitions`` by worker processes.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

from backfiller import (
    DailyPartitions,
    Definitions,
    MonthlyPartitions,
    RetryPolicy,
    RunContext,
    asset,
)
from backfiller.definitions.assets import AssetDefinition

DAYS = DailyPartitions(start="2024-01-01", end="2025-01-01")
MONTHS = MonthlyPartitions(start="2024-01-01", end="2025-01-01")


def _mark(context: RunContext, what: str) -> None:
    folder = os.environ.get("BACKFILLER_TEST_MARKS")
    if folder:
        line = f"{what} {context.job_name} {context.partition_key} {time.monotonic_ns()}\n"
        with open(Path(folder) / f"{os.getpid()}.log", "a") as f:
            f.write(line)


def _work(context: RunContext) -> None:
    _mark(context, "start")
    failing = os.environ.get("BACKFILLER_TEST_FAIL", "")
    if f"{context.job_name}/{context.partition_key}" in failing.split(","):
        raise RuntimeError(f"{context.job_name} {context.partition_key} fails on purpose")
    seconds = float(context.run_config.get("seconds", 0)) if context.run_config else 0.0
    if seconds:
        time.sleep(seconds)
    _mark(context, "end")


CONFIG = {"type": "object", "properties": {"seconds": {"type": "number"}}}


def _asset(name: str, deps: list[str], partitions: object = DAYS) -> AssetDefinition:
    return asset(
        name=name,
        partitions=partitions,  # type: ignore[arg-type]
        deps=deps,
        retry=RetryPolicy(max_retries=1),
        config=CONFIG,
    )(_work)


DIAMOND = [
    _asset("top", []),
    _asset("left", ["top"]),
    _asset("right", ["top"]),
    _asset("bottom", ["left", "right"]),
]
CHAIN = [_asset("chain0", [])] + [_asset(f"chain{i}", [f"chain{i - 1}"]) for i in range(1, 10)]
MONTHLY = [_asset("events", []), _asset("monthly_report", ["events"], MONTHS)]

definitions = Definitions(assets=[*DIAMOND, *CHAIN, *MONTHLY])
