"""Benchmark of asset backfills: a 10-level chain of no-op assets over daily partitions.

Prints, for a launch of ``--partitions`` daily partitions of the chain's root with everything
downstream (10 x N runs): the time from the launch mutation to COMPLETED_SUCCESS, and the
upstream-to-downstream delay of every (level i, day) for i >= 1: from the end of the run of
(level i - 1, day) to the claim (queued) and to the start of the run of (level i, day).

Two runs: **busy** (the whole chain at once, 2 workers always busy: a downstream partition
waits for a free worker too) and **idle** (``maxConcurrentRuns: 1``, so each upstream success
finds the worker free: the scheduler's own delay). The anchor is Dagster's asset backfill
daemon, which evaluates one level per 30 s tick: 9 levels x 30 s = 270 s of waits per chain.

SQLite, the local launcher with 2 worker processes, the daemon in this process (workers started
before the clock). Run with ``python -m bench.assets`` (``--partitions 100`` for a quick run;
``--only idle --idle-partitions 100`` for 1,000 idle runs). ``bench.asset_memory`` measures a
3 x 100,000-partition backfill's launch rows and daemon memory.
Asserts nothing.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import tempfile
import time
from datetime import date, timedelta
from pathlib import Path
from typing import Any

from sqlalchemy import select

from backfiller.api import build_schema
from backfiller.config import Settings
from backfiller.daemon import Daemon, DaemonSettings
from backfiller.domain import BackfillState
from backfiller.launchers import LocalLauncher
from backfiller.resolvers.access import ANONYMOUS_ADMIN
from backfiller.resolvers.context import Context, Services
from backfiller.resolvers.source import StorageSource
from backfiller.storage import Database
from backfiller.storage.migrations import upgrade_database
from backfiller.storage.records import BackfillRecord, RunRecord
from bench.asset_defs import LEVELS, definitions

TARGET = "bench.asset_defs:definitions"
LAUNCH = """mutation($input: LaunchBackfillInput!) {
  launchBackfill(input: $input) { backfill { id } userErrors { code message } }
}"""
DAGSTER_TICK_SECONDS = 30.0


async def _launch(database: Database, partitions: int, limit: int | None) -> int:
    services = Services(database=database, definitions=definitions, settings=Settings())
    schema = build_schema(services.settings)
    context = Context(
        services=services,
        source=StorageSource(services),
        request_id="bench",
        principal=ANONYMOUS_ADMIN,
    )
    end = date(2020, 1, 1) + timedelta(days=partitions - 1)
    variables: dict[str, Any] = {
        "input": {
            "target": {"assets": {"names": ["level0"], "downstream": True}},
            "partitions": {"range": {"start": "2020-01-01", "end": end.isoformat()}},
        }
    }
    if limit is not None:
        variables["input"]["maxConcurrentRuns"] = limit
    result = await schema.execute(LAUNCH, variable_values=variables, context_value=context)
    assert result.errors is None, result.errors
    data = result.data
    assert data is not None and data["launchBackfill"]["userErrors"] == [], data
    return int(data["launchBackfill"]["backfill"]["id"][3:])


def _percentile(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(p / 100 * (len(ordered) - 1)))]


async def chain(folder: Path, name: str, partitions: int, limit: int | None) -> None:
    url = f"sqlite:///{folder / (name + '.db')}"
    upgrade_database(url)
    database = Database(url)
    launcher = LocalLauncher(TARGET, 2).start()
    daemon = Daemon(database, definitions, launcher, DaemonSettings(shutdown_grace_seconds=5))
    stop = asyncio.Event()
    task = asyncio.create_task(daemon.run(stop))
    while launcher.ready_workers() < 2:  # noqa: ASYNC110 (the launcher has no event)
        await asyncio.sleep(0.02)
    started = time.perf_counter()
    pk = await _launch(database, partitions, limit)
    while True:
        await asyncio.sleep(0.05)
        async with database.read() as session:
            record = await session.get(BackfillRecord, pk, populate_existing=True)
        assert record is not None
        if record.status is BackfillState.COMPLETED_SUCCESS:
            break
        assert record.status in (BackfillState.REQUESTED, BackfillState.RUNNING), record.status
    took = time.perf_counter() - started
    stop.set()
    await task
    async with database.read() as session:
        rows = (
            await session.execute(
                select(
                    RunRecord.job_name,
                    RunRecord.partition_key,
                    RunRecord.queued_at,
                    RunRecord.started_at,
                    RunRecord.ended_at,
                ).where(RunRecord.backfill_id == pk)
            )
        ).all()
    await database.dispose()
    by = {(r.job_name, r.partition_key): r for r in rows}
    claim: list[float] = []
    start: list[float] = []
    for (job, key), r in by.items():
        level = int(job.removeprefix("level"))
        if level == 0:
            continue
        up = by[(f"level{level - 1}", key)]
        claim.append((r.queued_at - up.ended_at).total_seconds() * 1000)
        start.append((r.started_at - up.ended_at).total_seconds() * 1000)
    runs = len(rows)
    print(f"{name}: {LEVELS}-level chain x {partitions} daily partitions = {runs} runs, 2 workers")
    print(f"  launch to COMPLETED_SUCCESS:  {took:8.2f} s  ({runs / took:6.0f} runs/s)")
    for what, values in (("to claim", claim), ("to start", start)):
        print(
            f"  upstream end -> downstream {what}: p50 {_percentile(values, 50):7.1f} ms  "
            f"p99 {_percentile(values, 99):7.1f} ms  max {max(values):7.1f} ms "
            f"(mean {statistics.fmean(values):.1f} ms, n={len(values)})"
        )
    dagster = (LEVELS - 1) * DAGSTER_TICK_SECONDS
    print(f"  anchor: Dagster, one level per 30 s tick: >= {dagster:.0f} s of waits per chain")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--partitions", type=int, default=1_000)
    parser.add_argument("--idle-partitions", type=int, default=20)
    parser.add_argument("--only", choices=["busy", "idle"], help="run one of the two")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        if args.only != "idle":
            asyncio.run(chain(folder, "busy", args.partitions, None))
        if args.only != "busy":
            asyncio.run(chain(folder, "idle", args.idle_partitions, 1))


if __name__ == "__main__":
    main()
