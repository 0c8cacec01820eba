"""Jobs with backfill policies for the ranged runs' acceptance tests.

Every execution appends a ``start`` and an ``end`` line (run id, attempt, its partition keys,
its window, a monotonic nanosecond clock shared by the machine's processes) to a file in
``$BACKFILLER_TEST_MARKS``, and holds an exclusive ``flock`` per (job, partition) while it runs:
an execution that finds one of its partitions locked writes an ``overlap`` line. A job fails
while the file ``fail-<job>`` exists in that folder.

Importable as ``tests.acceptance.ranged_defs:definitions`` by worker processes.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import time
from collections.abc import Iterator
from pathlib import Path

from backfiller import DailyPartitions, Definitions, RetryPolicy, RunContext, job
from backfiller.definitions.policies import multi_run, single_run

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
        time.sleep(0.05)
        if (folder / f"fail-{context.job_name}").exists():
            raise RuntimeError(f"{context.job_name} fails while its flag file exists")
        _mark(folder, context, "end")


whole = job(name="whole", partitions=DAYS, backfill_policy=single_run())(_work)
fours = job(name="fours", partitions=DAYS, backfill_policy=multi_run(4))(_work)
flaky = job(
    name="flaky", partitions=DAYS, backfill_policy=multi_run(4), retry=RetryPolicy(max_retries=1)
)(_work)
missing = job(name="missing", partitions=DAYS, backfill_policy=multi_run(4))(_work)

definitions = Definitions(jobs=[whole, fours, flaky, missing])
