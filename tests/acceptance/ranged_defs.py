"""Jobs with backfill policies for the ranged runs' acceptance tests.

Every execution appends a ``start`` and an ``end`` line (run id, attempt, its partition keys,
its window, a monotonic nanosecond clock shared by the machine's processes) to a file in
``$BACKFILLER_TEST_MARKS``, and holds an exclusive ``flock`` per (job, partition) while it runs:
an execution that finds one of its partitions locked writes an ``overlap`` line. A job fails
while the file ``fail-<job>`` exists in that folder; ``runConfig: {seconds}`` sets how long it
works (50 ms by default).

Importable as ``tests.acceptance.ranged_defs:definitions`` by worker processes.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import time
from collections.abc import Iterator
from pathlib import Path

from backfiller import (
    AssetDefinition,
    BackfillPolicy,
    DailyPartitions,
    Definitions,
    JobDefinition,
    RetryPolicy,
    RunContext,
    asset,
    job,
    multi_run,
    single_run,
)

DAYS = DailyPartitions(start="2024-01-01", end="2025-01-01")


def _mark(folder: Path, context: RunContext, what: str) -> None:
    window = f"{context.partition_start:%Y-%m-%dT%H}/{context.partition_end:%Y-%m-%dT%H}"
    keys = ",".join(context.partition_keys)
    line = (
        f"{what} {context.job_name} {context.run_id} {context.attempt} {keys} {window} "
        f"{time.monotonic_ns()}\n"
    )
    with open(folder / f"{os.getpid()}.log", "a") as f:
        f.write(line)


@contextlib.contextmanager
def _held(folder: Path, context: RunContext) -> Iterator[None]:
    """An exclusive lock per partition of the run, for as long as it executes."""
    files = []
    try:
        for key in context.partition_keys:
            f = open(folder / f"lock-{context.job_name}-{key}", "a")  # noqa: SIM115
            files.append(f)
            try:
                fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                _mark(folder, context, "overlap")
        yield
    finally:
        for f in files:
            f.close()


def _work(context: RunContext) -> None:
    folder = Path(os.environ["BACKFILLER_TEST_MARKS"])
    with _held(folder, context):
        _mark(folder, context, "start")
        time.sleep(float((context.run_config or {}).get("seconds", 0.05)))
        if (folder / f"fail-{context.job_name}").exists():
            raise RuntimeError(f"{context.job_name} fails while its flag file exists")
        _mark(folder, context, "end")


CONFIG = {"type": "object", "properties": {"seconds": {"type": "number"}}}


def _job(name: str, policy: BackfillPolicy, retries: int = 0) -> JobDefinition:
    return job(
        name=name,
        partitions=DAYS,
        backfill_policy=policy,
        retry=RetryPolicy(max_retries=retries),
        config=CONFIG,
    )(_work)


def _asset(name: str, deps: list[str], policy: BackfillPolicy | None = None) -> AssetDefinition:
    return asset(name=name, partitions=DAYS, deps=deps, backfill_policy=policy, config=CONFIG)(
        _work
    )


definitions = Definitions(
    assets=[
        _asset("raw_days", []),
        _asset("weekly", ["raw_days"], multi_run(4)),
        _asset("after_weekly", ["weekly"]),
    ],
    jobs=[
        _job("whole", single_run()),
        _job("fours", multi_run(4)),
        _job("flaky", multi_run(4), retries=1),
        _job("missing", multi_run(4)),
        _job("threes", multi_run(3)),
        _job("slow", multi_run(2)),
    ],
)
