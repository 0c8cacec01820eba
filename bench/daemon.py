"""Benchmarks of the daemon, on SQLite with the local launcher. Prints figures; asserts nothing.

1. Runs per second, end to end, for a 10,000-partition backfill of a no-op job: the daemon
   (with its worker pool) runs in this process; the clock starts at the launch mutation and
   stops when the backfill is COMPLETED_SUCCESS (worker start-up is paid before, once).
2. Peak RSS of a daemon process (``backfiller daemon``, workers excluded) serving a
   1,000,000-partition backfill: planning lazily and launching for ``--memory-seconds``.
3. Latency of reading ``counts`` and ``partitionStatusRanges`` of a 100,000-partition backfill
   whose slots are all materialized in many status ranges (``schema.execute``, in process).

Run with ``python -m bench.daemon`` (``--quick`` for smaller sizes).
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import os
import pstats
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from sqlalchemy import insert, select

from backfiller import HourlyPartitions
from backfiller.api import build_schema
from backfiller.config import Settings
from backfiller.daemon import Daemon, DaemonSettings
from backfiller.definitions.loading import Definitions
from backfiller.domain import BackfillState, SlotState
from backfiller.launchers import LocalLauncher
from backfiller.resolvers.access import ANONYMOUS_ADMIN
from backfiller.resolvers.context import Context, Services
from backfiller.resolvers.source import StorageSource
from backfiller.storage import Database
from backfiller.storage.migrations import upgrade_database
from backfiller.storage.records import BackfillRecord, SlotRecord
from bench import stack_defs
from bench.defs import definitions
from bench.proc_cpu import process_cpu

REPO = Path(__file__).resolve().parent.parent
TARGET = "bench.defs:definitions"
STACK_TARGET = "bench.stack_defs:definitions"
LAUNCH = """mutation($input: LaunchBackfillInput!) {
  launchBackfill(input: $input) { backfill { id } userErrors { code message } }
}"""


class Api:
    def __init__(self, database: Database, defs: Definitions = definitions) -> None:
        self.services = Services(database=database, definitions=defs, settings=Settings())
        self.schema = build_schema(self.services.settings)

    async def __call__(self, query: str, variables: dict[str, Any] | None = None) -> Any:
        context = Context(
            services=self.services,
            source=StorageSource(self.services),
            request_id="bench",
            principal=ANONYMOUS_ADMIN,
        )
        result = await self.schema.execute(query, variable_values=variables, context_value=context)
        assert result.errors is None, result.errors
        return result.data

    async def launch(
        self, size: int, job: str = "hourly_history", run_config: dict[str, Any] | None = None
    ) -> int:
        """Launch the first ``size`` partitions of ``job`` (a range)."""
        found = self.services.definitions.get_job(job)
        assert found is not None, job
        space = found.partitions.key_space(datetime.now(UTC))
        span = {"start": space.key_at(0), "end": space.key_at(size - 1)}
        variables = {"input": {"target": {"job": job}, "partitions": {"range": span}}}
        if run_config is not None:
            variables["input"]["runConfig"] = run_config
        data = await self(LAUNCH, variables)
        assert data["launchBackfill"]["userErrors"] == [], data
        return int(data["launchBackfill"]["backfill"]["id"][3:])


def fresh_database(folder: Path, name: str) -> str:
    url = f"sqlite:///{folder / name}"
    upgrade_database(url)
    return url


async def throughput(
    folder: Path,
    size: int,
    workers: int,
    profile: bool,
    url: str | None,
    job: str | None,
    like_cli: set[str] = frozenset(),  # type: ignore[assignment]
) -> None:
    """The daemon runs already (workers started); the clock starts at the launch mutation.

    ``url``: the database (upgraded here) instead of a new SQLite file; ``job``: a job of
    ``bench.stack_defs`` instead of ``bench.defs``'s ``hourly_history``. ``like_cli``: what
    ``backfiller daemon`` adds to a bare daemon, to tell what each costs: ``results`` (the
    workers keep each run's end in a results folder), ``metrics`` (the workers record their
    metrics in files, the daemon its gauges and refresh task).
    """
    if url is None:
        url = fresh_database(folder, "throughput.db")
    else:
        upgrade_database(url)
    defs, target = (stack_defs.definitions, STACK_TARGET) if job else (definitions, TARGET)
    database = Database(url)
    api = Api(database, defs)
    booted = time.perf_counter()
    if "metrics" in like_cli:
        from backfiller.observability.exposition import prepare_worker_metrics

        prepare_worker_metrics()
    results = str(folder / "results") if "results" in like_cli else None
    # Given the database as ``backfiller daemon`` gives it: the workers' gates connect at start,
    # and the backlog is the database's (deeper on PostgreSQL).
    launcher = LocalLauncher(target, workers, results_dir=results, database_url=url).start()
    daemon = Daemon(database, defs, launcher, DaemonSettings(shutdown_grace_seconds=5))
    if "metrics" in like_cli:
        from backfiller.observability.daemon_ops import observe_daemon

        observe_daemon(daemon, None)
    stop = asyncio.Event()
    task = asyncio.create_task(daemon.run(stop))
    while launcher.ready_workers() < workers:  # noqa: ASYNC110 (the launcher has no event)
        await asyncio.sleep(0.02)
    ready = time.perf_counter() - booted
    profiler = cProfile.Profile() if profile else None
    if profiler:
        profiler.enable()
    cpu_before = {pid: process_cpu(pid) for pid in [os.getpid(), *launcher.worker_pids()]}
    started = time.perf_counter()
    pk = await api.launch(size, job or "hourly_history")
    first_success: float | None = None
    while True:
        await asyncio.sleep(0.1)
        async with database.read() as session:
            record = await session.get(BackfillRecord, pk, populate_existing=True)
        assert record is not None
        if first_success is None and record.succeeded:
            first_success = time.perf_counter()
        if record.status is BackfillState.COMPLETED_SUCCESS:
            break
    ended = time.perf_counter()
    cpu_used = {pid: process_cpu(pid) - before for pid, before in cpu_before.items()}
    if profiler:
        profiler.disable()
    stop.set()
    await task
    await database.dispose()
    assert first_success is not None
    where = "SQLite" if url.startswith("sqlite") else "PostgreSQL"
    extras = f", with {' and '.join(sorted(like_cli))} as the CLI's daemon" if like_cli else ""
    print(f"throughput: {size} no-op runs, {workers} workers, {where}, local launcher{extras}")
    took = ended - started
    print(f"  launch to COMPLETED_SUCCESS:  {took:7.2f} s  {size / took:7.0f} runs/s")
    print(f"  first run succeeded after:    {first_success - started:7.2f} s")
    print(f"  (before: daemon start to workers ready: {ready:.2f} s, spawn + imports, once)")
    daemon_cpu = cpu_used.pop(os.getpid())
    print(
        f"  CPU per run:  daemon (and API) {daemon_cpu / size * 1e6:5.0f} us, "
        f"workers {sum(cpu_used.values()) / size * 1e6:5.0f} us"
    )
    print(f"  daemon totals: {daemon.totals}")
    if profiler:
        stats = pstats.Stats(profiler)
        stats.sort_stats("tottime").print_stats(25)


def peak_rss_kb(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1])
    return 0


async def memory(folder: Path, size: int, seconds: float) -> None:
    url = fresh_database(folder, "memory.db")
    database = Database(url)
    api = Api(database)
    t0 = time.perf_counter()
    pk = await api.launch(size)
    launched = time.perf_counter() - t0
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    proc = subprocess.Popen(  # noqa: ASYNC220 (started once, before measuring)
        [
            sys.executable,
            "-m",
            "backfiller",
            "daemon",
            "--database",
            url,
            "--definitions",
            TARGET,
            "--workers",
            "2",
        ],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    started = time.perf_counter()
    first_run: float | None = None
    samples: list[int] = []
    while time.perf_counter() - started < seconds:
        await asyncio.sleep(0.5)
        samples.append(peak_rss_kb(proc.pid))
        if first_run is None:
            async with database.read() as session:
                record = await session.get(BackfillRecord, pk, populate_existing=True)
            if record is not None and record.succeeded:
                first_run = time.perf_counter() - started
    peak = peak_rss_kb(proc.pid)
    proc.send_signal(signal.SIGTERM)
    proc.wait(30)
    async with database.read() as session:
        record = await session.get(BackfillRecord, pk, populate_existing=True)
        slots = len(
            (await session.execute(select(SlotRecord.id).where(SlotRecord.backfill_id == pk))).all()
        )
    assert record is not None
    await database.dispose()
    print(f"memory: {size:,}-partition backfill, daemon process for {seconds:.0f} s")
    print(f"  launch (one insert):          {launched * 1000:7.1f} ms")
    print(f"  first run succeeded after:    {first_run or float('nan'):7.2f} s from daemon start")
    print(f"  daemon peak RSS (VmHWM):      {peak / 1024:7.1f} MB")
    print(f"  RSS samples (MB): {[round(s / 1024) for s in samples[:: max(1, len(samples) // 8)]]}")
    print(f"  runs done: {record.succeeded:,}; slots materialized: {slots:,}")


async def reads(folder: Path, size: int, repeat: int) -> None:
    url = fresh_database(folder, "reads.db")
    database = Database(url)
    api = Api(database)
    pk = await api.launch(size)
    now = datetime.now(UTC)
    space = HourlyPartitions(start="1900-01-01-00:00").key_space(now)
    statuses = [SlotState.SUCCEEDED] * 6 + [SlotState.FAILED, SlotState.SKIPPED]
    rows = []
    counts = {s: 0 for s in SlotState}
    for position in range(size):
        status = statuses[(position // 97) % len(statuses)]
        counts[status] += 1
        rows.append(
            {
                "backfill_id": pk,
                "position": position,
                "partition_key": space.key_at(position),
                "status": status,
                "attempts": 1,
                "free_attempts": 0,
                "updated_at": now,
            }
        )
    async with database.write() as session:
        for i in range(0, size, 10_000):
            await session.execute(insert(SlotRecord), rows[i : i + 10_000])
        record = await session.get(BackfillRecord, pk)
        assert record is not None
        record.planned = size
        record.pending = 0
        record.succeeded = counts[SlotState.SUCCEEDED]
        record.failed = counts[SlotState.FAILED]
        record.skipped = counts[SlotState.SKIPPED]
        record.status = BackfillState.COMPLETED_FAILED
        record.version += 1
    q_counts = (
        "query($id: ID!) { backfill(id: $id) { status counts { total pending queued running "
        "succeeded failed canceled skipped percentDone } } }"
    )
    q_ranges = (
        "query($id: ID!) { backfill(id: $id) { "
        "partitionStatusRanges { status startKey endKey startIndex count } } }"
    )
    variables = {"id": f"bf_{pk}"}
    for name, query in (("counts", q_counts), ("partitionStatusRanges", q_ranges)):
        timings: list[float] = []
        answer: Any = None
        for _ in range(repeat):
            t0 = time.perf_counter()
            answer = await api(query, variables)
            timings.append((time.perf_counter() - t0) * 1000)
        if name == "counts":
            print(f"reads of a {size:,}-partition backfill ({repeat} reads each, schema.execute)")
            p50, worst = statistics.median(timings), max(timings)
            print(f"  counts:                 p50 {p50:6.2f} ms  max {worst:6.2f} ms")
        else:
            ranges = len(answer["backfill"]["partitionStatusRanges"])
            print(
                f"  partitionStatusRanges:  p50 {statistics.median(timings):6.2f} ms  "
                f"max {max(timings):6.2f} ms  first (cold) {timings[0]:6.2f} ms  ({ranges} ranges)"
            )
    # A changed backfill (new version) is computed again, not served from the cache.
    async with database.write() as session:
        record = await session.get(BackfillRecord, pk)
        assert record is not None
        record.version += 1
    t0 = time.perf_counter()
    await api(q_ranges, variables)
    changed = (time.perf_counter() - t0) * 1000
    print(f"  partitionStatusRanges after a change (uncached): {changed:6.2f} ms")
    await database.dispose()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true", help="smaller sizes")
    parser.add_argument("--only", choices=["throughput", "memory", "reads"])
    parser.add_argument("--workers", type=int, default=os.cpu_count() or 2)
    parser.add_argument("--profile", action="store_true", help="cProfile the throughput run")
    parser.add_argument("--memory-seconds", type=float, default=30.0)
    parser.add_argument("--size", type=int, help="partitions of the throughput run")
    parser.add_argument("--database", help="the throughput run's database (a URL; upgraded)")
    parser.add_argument("--job", help="a job of bench.stack_defs for the throughput run")
    parser.add_argument(
        "--like-cli",
        default="",
        help="results,metrics: what `backfiller daemon` adds, in the throughput run",
    )
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-daemon-") as tmp:
        folder = Path(tmp)
        if args.only in (None, "throughput"):
            size = args.size or (1_000 if args.quick else 10_000)
            asyncio.run(
                throughput(
                    folder,
                    size,
                    args.workers,
                    args.profile,
                    args.database,
                    args.job,
                    {w for w in args.like_cli.split(",") if w},
                )
            )
        if args.only in (None, "memory"):
            asyncio.run(memory(folder, 1_000_000, 10 if args.quick else args.memory_seconds))
        if args.only in (None, "reads"):
            asyncio.run(reads(folder, 10_000 if args.quick else 100_000, 20))


if __name__ == "__main__":
    main()
