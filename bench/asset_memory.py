"""Benchmark of an asset backfill's footprint: 3 chained assets x 100,000 daily partitions.

Launches ``level0 -> level1 -> level2`` over ``--days`` daily partitions (3 x days asset
partitions) on SQLite through ``launchBackfill`` and prints how many rows the launch inserted,
per table (one backfill row and its ``launched`` event: no row per partition). Then starts a
daemon process (``backfiller daemon``, 2 local workers) on it and samples that process's RSS
(workers excluded) every ``--every`` seconds while it plans and claims, until ``--runs`` runs
have succeeded or ``--seconds`` have passed: RSS over time beside the slots materialized and
the runs done, and the peak (VmHWM).

Run with ``python -m bench.asset_memory`` (``--days 10000 --runs 500`` for a quick run).
Asserts nothing.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import signal
import subprocess
import sys
import tempfile
import time
from datetime import date, timedelta
from pathlib import Path
from typing import Any

from sqlalchemy import func, select

from backfiller import DailyPartitions, Definitions, RunContext, asset
from backfiller.api import build_schema
from backfiller.config import Settings
from backfiller.definitions.assets import AssetDefinition
from backfiller.resolvers.access import ANONYMOUS_ADMIN
from backfiller.resolvers.context import Context, Services
from backfiller.resolvers.source import StorageSource
from backfiller.storage import Database
from backfiller.storage.metadata import metadata
from backfiller.storage.migrations import upgrade_database
from backfiller.storage.records import BackfillRecord

REPO = Path(__file__).resolve().parent.parent
TARGET = "bench.asset_memory:definitions"
FIRST_DAY = date(1800, 1, 1)
DAYS = DailyPartitions(start=FIRST_DAY.isoformat(), end="2100-01-01")  # about 109,500 days
LEVELS = 3
LAUNCH = """mutation($input: LaunchBackfillInput!) {
  launchBackfill(input: $input) { backfill { id } userErrors { code message } }
}"""


def _noop(context: RunContext) -> None:
    """Does nothing: measures the service, not the asset."""


def _level(i: int) -> AssetDefinition:
    deps = [f"level{i - 1}"] if i else []
    return asset(name=f"level{i}", partitions=DAYS, deps=deps)(_noop)


definitions = Definitions(assets=[_level(i) for i in range(LEVELS)])


async def _row_counts(database: Database) -> dict[str, int]:
    async with database.read() as session:
        return {
            table.name: int(
                (await session.execute(select(func.count()).select_from(table))).scalar_one()
            )
            for table in metadata.sorted_tables
        }


async def _launch(database: Database, days: int) -> int:
    services = Services(database=database, definitions=definitions, settings=Settings())
    context = Context(
        services=services,
        source=StorageSource(services),
        request_id="bench",
        principal=ANONYMOUS_ADMIN,
    )
    end = FIRST_DAY + timedelta(days=days - 1)
    variables: dict[str, Any] = {
        "input": {
            "target": {"assets": {"names": ["level0"], "downstream": True}},
            "partitions": {"range": {"start": FIRST_DAY.isoformat(), "end": end.isoformat()}},
        }
    }
    schema = build_schema(services.settings)
    result = await schema.execute(LAUNCH, variable_values=variables, context_value=context)
    assert result.errors is None, result.errors
    data = result.data
    assert data is not None and data["launchBackfill"]["userErrors"] == [], data
    return int(data["launchBackfill"]["backfill"]["id"][3:])


def _rss_kb(pid: int) -> tuple[int, int]:
    """The process's current RSS and its peak (VmRSS, VmHWM), in kB."""
    found = {"VmRSS:": 0, "VmHWM:": 0}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        name = line.split(maxsplit=1)[0] if line else ""
        if name in found:
            found[name] = int(line.split()[1])
    return found["VmRSS:"], found["VmHWM:"]


def _start_daemon(url: str) -> subprocess.Popen[bytes]:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    command = [sys.executable, "-m", "backfiller", "daemon", "--database", url]
    return subprocess.Popen(
        [*command, "--definitions", TARGET, "--workers", "2"],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )


async def footprint(folder: Path, days: int, runs: int, seconds: float, every: float) -> None:
    url = f"sqlite:///{folder / 'asset-memory.db'}"
    upgrade_database(url)
    database = Database(url)
    before = await _row_counts(database)
    began = time.perf_counter()
    pk = await _launch(database, days)
    launched = time.perf_counter() - began
    after = await _row_counts(database)
    inserted = {t: after[t] - before[t] for t in after if after[t] != before[t]}
    print(f"asset memory: {LEVELS}-asset chain x {days:,} daily partitions, SQLite")
    print(f"  launch: {launched * 1000:.1f} ms; rows inserted: {inserted}")
    proc = _start_daemon(url)
    started = time.perf_counter()
    print("     t (s)   RSS (MB)   slots planned   runs succeeded")
    record: BackfillRecord | None = None
    try:
        while time.perf_counter() - started < seconds:
            await asyncio.sleep(every)
            rss, _peak = _rss_kb(proc.pid)
            async with database.read() as session:
                record = await session.get(BackfillRecord, pk, populate_existing=True)
            assert record is not None
            print(
                f"  {time.perf_counter() - started:8.1f}   {rss / 1024:8.1f}   "
                f"{record.planned:13,}   {record.succeeded:14,}"
            )
            if record.succeeded >= runs:
                break
        _rss, peak = _rss_kb(proc.pid)
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(60)
    await database.dispose()
    print(f"  daemon peak RSS (VmHWM): {peak / 1024:.1f} MB")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--days", type=int, default=100_000)
    parser.add_argument("--runs", type=int, default=3_000, help="stop after this many runs")
    parser.add_argument("--seconds", type=float, default=180.0, help="stop after this long")
    parser.add_argument("--every", type=float, default=2.0, help="seconds between samples")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        asyncio.run(footprint(Path(tmp), args.days, args.runs, args.seconds, args.every))


if __name__ == "__main__":
    main()
