"""History at scale on PostgreSQL: every read of the UI and CLI, at a small size and at five
million runs, in the same run. Prints figures; asserts nothing.

For each size, a database of its own gets a history built in SQL in the daemon's row shapes
(``bench/history_rows.py``: 100 daily jobs, backfills of 1,000 partitions, 3 log lines a run,
1% of runs failed and retried, trigger evaluations and audit entries a tenth of the runs each),
then ``VACUUM ANALYZE`` (what autovacuum does in a live database). Then:

1. ``backfiller serve`` (a real server process) answers every read the UI and the CLI make,
   ``--requests`` times each over HTTP, one at a time: p50 and p99 (the slowest but one per
   hundred; with fewer requests, the slowest).
2. The same reads in this process, every statement they send recorded and run again under
   ``EXPLAIN (ANALYZE, BUFFERS)``: the buffers (8 kB pages, hit or read) per read.
3. Dispatch: a daemon (local launcher) runs a ``--dispatch``-partition backfill of a no-op job
   on that database; runs per second from the launch to COMPLETED_SUCCESS. The daemon keeps
   the history (the history is from 2020: with the default retention it would prune it
   meanwhile, a backlog measured apart in 4).
4. Pruning: every finished backfill made expired, ``--prune-seconds`` of ``Pruner.prune``
   (1,000-row transactions): rows deleted one by one per second, all tables together, and the
   history ranges dropped whole meanwhile (PostgreSQL partitions, ``storage.history_partitions``).

The history's backfills are in one range, a day's launches at 10 million runs a day, unless
``--range-backfills N`` puts each N in a range of their own (``--range-backfills 100`` at five
million runs: 50 ranges, about what a retention of 50 days keeps at a range a day: the reads
that cannot name a backfill read one index per range).

Run with ``python -m bench.scale`` (``--runs 5000000``, ``--small 100000``: a backfill per
job); the databases are dropped at the end (``--keep`` keeps them). Check ``df -h`` first.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import subprocess
import sys
import time
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
from sqlalchemy import create_engine, event, text

from backfiller.api import build_schema
from backfiller.config import HistorySettings, Settings
from backfiller.daemon import Daemon, DaemonSettings
from backfiller.domain import BackfillState
from backfiller.launchers import LocalLauncher
from backfiller.resolvers.access import ANONYMOUS_ADMIN
from backfiller.resolvers.context import Context, Services
from backfiller.resolvers.source import StorageSource
from backfiller.services.pruning import Cutoffs, Pruner
from backfiller.storage import Database
from backfiller.storage.engine import sync_database_url
from backfiller.storage.history_partitions import partitioned, ranges
from backfiller.storage.migrations import upgrade_database
from backfiller.storage.records import BackfillRecord
from bench.databases import scratch_postgres
from bench.history_rows import HistoryShape, build_history
from bench.scale_defs import TRIGGERS, definitions, history_jobs

REPO = Path(__file__).resolve().parent.parent
TARGET = "bench.scale_defs:definitions"

BACKFILL_FIELDS = "id status counts { total pending running succeeded failed skipped }"


def reads(backfill: str, run: str, job: str, key: str) -> dict[str, tuple[str, dict[str, Any]]]:
    """Every read of the UI and the CLI: (document, variables) by name."""
    page = f"{{ edges {{ node {{ {BACKFILL_FIELDS} title tags {{ key value }} }} }} }}"
    return {
        "backfills": (f"{{ backfills(first: 20) {page} }}", {}),
        "backfills, one status": (
            f"{{ backfills(first: 20, filter: {{statuses: [COMPLETED_SUCCESS]}}) {page} }}",
            {},
        ),
        "backfills, two statuses": (
            f"{{ backfills(first: 20, filter: {{statuses: [RUNNING, CANCELED]}}) {page} }}",
            {},
        ),
        "backfills, job": (
            f'{{ backfills(first: 20, filter: {{job: "{job}"}}) {page} }}',
            {},
        ),
        "backfills, tag": (
            f'{{ backfills(first: 20, filter: {{tag: {{key: "team", value: "t7"}}}}) {page} }}',
            {},
        ),
        "backfill(id) with counts": (
            f"query($id: ID!) {{ backfill(id: $id) {{ {BACKFILL_FIELDS} }} }}",
            {"id": backfill},
        ),
        "strip": (
            "query($id: ID!) { backfill(id: $id) { partitionStatusRanges "
            "{ status startKey endKey count } } }",
            {"id": backfill},
        ),
        "partitions": (
            "query($id: ID!) { backfill(id: $id) { partitions(first: 50) "
            "{ nodes { key status attempts } } } }",
            {"id": backfill},
        ),
        "runs": (
            "query($id: ID!) { backfill(id: $id) { runs(first: 50) "
            "{ nodes { id partitionKey status attempt } } } }",
            {"id": backfill},
        ),
        "runs, failed": (
            "query($id: ID!) { backfill(id: $id) { runs(first: 50, statuses: [FAILED]) "
            "{ nodes { id partitionKey status errorMessage } } } }",
            {"id": backfill},
        ),
        "events": (
            "query($id: ID!) { backfill(id: $id) { events(first: 50) { nodes { kind at } } } }",
            {"id": backfill},
        ),
        "partition history": (
            "query($key: String!, $job: String!) { runs(first: 50, job: $job, partitionKey: $key) "
            "{ nodes { id status attempt startedAt } } }",
            {"key": key, "job": job},
        ),
        "runs of a job": (
            "query($job: String!) { runs(first: 50, job: $job) "
            "{ nodes { id partitionKey status } } }",
            {"job": job},
        ),
        "run logs": (
            "query($id: ID!) { run(id: $id) { logs(first: 50) { nodes { at level message } } } }",
            {"id": run},
        ),
        "jobs page (100 jobs)": (
            "{ jobs { name partitions { count } partitionStatusRanges "
            "{ status startKey endKey count } } }",
            {},
        ),
        "a job's ranges": (
            "query($job: String!) { job(name: $job) { partitionStatusRanges "
            "{ status startKey endKey count } } }",
            {"job": job},
        ),
        "triggers": (
            "{ triggers { name enabled lastEvaluation { outcome evaluatedAt skipReason } } }",
            {},
        ),
        "a trigger's evaluations": (
            '{ trigger(name: "trigger_3") { evaluations(first: 20) { nodes { outcome } } } }',
            {},
        ),
        "audit": ("{ auditLog(first: 50) { nodes { operation actor at } } }", {}),
        "audit, actor": (
            '{ auditLog(first: 50, actor: "token-7") { nodes { operation at } } }',
            {},
        ),
        "audit, operation": (
            '{ auditLog(first: 50, operation: "pauseBackfill") { nodes { actor at } } }',
            {},
        ),
    }


@dataclass
class Figures:
    size: int
    build_seconds: float = 0.0
    disk_bytes: int = 0
    latency: dict[str, list[float]] = field(default_factory=dict)
    buffers: dict[str, int] = field(default_factory=dict)
    dispatch: float = 0.0
    pruned: float = 0.0
    ranges: int = 0
    dropped: tuple[int, int, float] = (0, 0, 0.0)
    """History ranges dropped by the pruning, their rows, and the seconds it took."""


def shape(runs: int, range_backfills: int | None = None) -> HistoryShape:
    jobs = [(j.name, j.partitions.fingerprint()) for j in history_jobs]
    return HistoryShape(
        runs=runs,
        range_backfills=range_backfills,
        jobs=jobs,
        log_lines=3,
        triggers=tuple(f"trigger_{n}" for n in range(TRIGGERS)),
        evaluations=max(1000, runs // 10),
        audit=max(1000, runs // 10),
    )


def build(url: str, figures: Figures, range_backfills: int | None) -> None:
    upgrade_database(url)
    engine = create_engine(sync_database_url(url))
    began = time.perf_counter()
    with engine.begin() as conn:
        build_history(conn, shape(figures.size, range_backfills))
        figures.ranges = len(ranges(conn)) if partitioned(conn) else 0
    with engine.connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
        conn.execute(text("VACUUM ANALYZE"))
        figures.disk_bytes = int(
            conn.execute(text("SELECT pg_database_size(current_database())")).scalar_one()
        )
    figures.build_seconds = time.perf_counter() - began
    engine.dispose()


def targets(url: str, size: int) -> tuple[str, str, str, str]:
    """A finished backfill in the middle of the history, one of its runs, its job and a
    partition key of that job."""
    per = shape(size)
    middle = max(1, per.backfills // 2)
    run = (middle - 1) * per.per_backfill + 1
    engine = create_engine(sync_database_url(url))
    with engine.connect() as conn:
        job, key = conn.execute(
            text("SELECT job_name, partition_key FROM runs WHERE id = :id"), {"id": run}
        ).one()
    engine.dispose()
    return f"bf_{middle}", f"run_{run}", str(job), str(key)


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(share * len(ordered)))]


def over_http(
    url: str, documents: dict[str, tuple[str, dict[str, Any]]], requests: int, figures: Figures
) -> None:
    port = 18700 + os.getpid() % 1000
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    server = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "backfiller",
            "serve",
            "--database",
            url,
            "--definitions",
            TARGET,
            "--auth",
            "none",
            "--host",
            "127.0.0.1",
            "--port",
            str(port),
        ],
        env=env,
        cwd=REPO,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    base = f"http://127.0.0.1:{port}"
    try:
        with httpx.Client(timeout=120) as client:
            deadline = time.monotonic() + 90
            while True:
                try:
                    if client.get(f"{base}/healthz").status_code == 200:
                        break
                except httpx.HTTPError:
                    pass
                if time.monotonic() > deadline:
                    raise RuntimeError("the server did not start")
                time.sleep(0.2)
            for name, (query, variables) in documents.items():
                body = {"query": query, "variables": variables}
                answer = client.post(f"{base}/graphql/v1", json=body).json()  # warm
                if answer.get("errors"):
                    raise RuntimeError(f"{name}: {answer['errors']}")
                took: list[float] = []
                for _ in range(requests):
                    began = time.perf_counter()
                    client.post(f"{base}/graphql/v1", json=body).raise_for_status()
                    took.append(time.perf_counter() - began)
                figures.latency[name] = took
    finally:
        server.terminate()
        server.wait(timeout=30)


async def buffers(
    url: str, documents: dict[str, tuple[str, dict[str, Any]]], figures: Figures
) -> None:
    database = Database(url)
    services = Services(database=database, definitions=definitions, settings=Settings())
    schema = build_schema(services.settings)
    recorded: list[tuple[str, Any]] = []

    def record(_c: Any, _cur: Any, statement: str, parameters: Any, *_: Any) -> None:
        if statement.lstrip().upper().startswith(("SELECT", "WITH")):
            recorded.append((statement, parameters))

    event.listen(database.write_engine.sync_engine, "before_cursor_execute", record)
    engine = create_engine(sync_database_url(url))
    try:
        with engine.connect() as conn:
            for name, (query, variables) in documents.items():
                recorded.clear()
                context = Context(
                    services=services, source=StorageSource(services), principal=ANONYMOUS_ADMIN
                )
                result = await schema.execute(
                    query, variable_values=variables, context_value=context
                )
                assert not result.errors, (name, result.errors)
                total = 0
                for statement, parameters in recorded:
                    plan = conn.exec_driver_sql(
                        "EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) " + statement, parameters
                    ).scalar_one()
                    top = plan[0]["Plan"]
                    total += int(top.get("Shared Hit Blocks", 0)) + int(
                        top.get("Shared Read Blocks", 0)
                    )
                conn.rollback()
                figures.buffers[name] = total
    finally:
        engine.dispose()
        await database.dispose()


async def dispatch(url: str, size: int, workers: int) -> float:
    database = Database(url)
    services = Services(database=database, definitions=definitions, settings=Settings())
    schema = build_schema(services.settings)
    launcher = LocalLauncher(TARGET, workers).start()
    # The history is from 2020: a daemon with the default retention would prune it meanwhile
    # (a backlog of millions of rows, measured apart below), not what dispatch at this size
    # costs.
    daemon = Daemon(
        database,
        definitions,
        launcher,
        DaemonSettings(shutdown_grace_seconds=5),
        history=HistorySettings(backfill_days=None, trigger_evaluation_days=None),
    )
    stop = asyncio.Event()
    task = asyncio.create_task(daemon.run(stop))
    try:
        while launcher.ready_workers() < workers:  # noqa: ASYNC110
            await asyncio.sleep(0.05)
        context = Context(
            services=services, source=StorageSource(services), principal=ANONYMOUS_ADMIN
        )
        began = time.perf_counter()
        result = await schema.execute(
            """mutation($n: String!) { launchBackfill(input: {target: {job: "dispatch_noop"},
               partitions: {range: {start: "1990-01-01", end: $n}}}) { backfill { id } } }""",
            variable_values={"n": (date(1990, 1, 1) + timedelta(days=size - 1)).isoformat()},
            context_value=context,
        )
        assert not result.errors, result.errors
        assert result.data is not None
        pk = int(result.data["launchBackfill"]["backfill"]["id"].removeprefix("bf_"))
        while True:
            await asyncio.sleep(0.1)
            async with database.read() as session:
                record = await session.get(BackfillRecord, pk, populate_existing=True)
            if record is not None and record.status is BackfillState.COMPLETED_SUCCESS:
                return size / (time.perf_counter() - began)
    finally:
        stop.set()
        await task
        await database.dispose()


async def prune_rate(url: str, seconds: float, figures: Figures) -> float:
    """Rows deleted one by one per second by the pruner, every finished backfill expired (the
    history ranges it dropped meanwhile in ``figures.dropped``)."""
    database = Database(url)
    try:
        pruner = Pruner(database, HistorySettings(backfill_days=None, trigger_evaluation_days=None))
        began = time.perf_counter()
        deleted = await pruner.prune(Cutoffs(datetime.now(UTC), None, None), seconds)
        took = time.perf_counter() - began
        # Rows deleted one by one: a range whose partitions were dropped is not counted.
        dropped = sum(n for d in pruner.dropped for n in d.rows.values())
        figures.dropped = (len(pruner.dropped), dropped, took)
        return (sum(deleted.values()) - dropped) / took
    finally:
        await database.dispose()


def measure(base: str, size: int, args: argparse.Namespace) -> Figures:
    figures = Figures(size)
    with scratch_postgres(base, f"bf_scale_{size}", args.keep) as url:
        print(f"building {size:,} runs ...", flush=True)
        build(url, figures, args.range_backfills)
        print(
            f"  built in {figures.build_seconds:.0f} s, {figures.disk_bytes / 2**30:.2f} GB, "
            f"{figures.ranges} history ranges",
            flush=True,
        )
        documents = reads(*targets(url, size))
        over_http(url, documents, args.requests, figures)
        asyncio.run(buffers(url, documents, figures))
        figures.dispatch = asyncio.run(dispatch(url, args.dispatch, args.workers))
        print(f"  dispatch {figures.dispatch:.0f} runs/s", flush=True)
        figures.pruned = asyncio.run(prune_rate(url, args.prune_seconds, figures))
        n, rows, took = figures.dropped
        print(
            f"  pruning {figures.pruned:.0f} rows/s one by one; {n} ranges dropped "
            f"({rows:,} rows) in {took:.1f} s",
            flush=True,
        )
    return figures


def report(small: Figures, big: Figures) -> None:
    print(
        f"\n{'read':<26}{'small p50':>10}{'p99':>8}{'big p50':>10}{'p99':>8}{'x p99':>7}"
        f"{'buffers':>9}{'big':>8}"
    )
    for name in small.latency:
        a, b = small.latency[name], big.latency[name]
        ms = [1000 * percentile(v, s) for v in (a, b) for s in (0.5, 0.99)]
        print(
            f"{name:<26}{ms[0]:>10.1f}{ms[1]:>8.1f}{ms[2]:>10.1f}{ms[3]:>8.1f}"
            f"{ms[3] / ms[1]:>7.2f}{small.buffers[name]:>9}{big.buffers[name]:>8}"
        )
    print(f"{'dispatch (runs/s)':<26}{small.dispatch:>18.0f}{big.dispatch:>18.0f}")
    print(f"{'pruning (rows/s)':<26}{small.pruned:>18.0f}{big.pruned:>18.0f}")
    print(f"{'history ranges':<26}{small.ranges:>18}{big.ranges:>18}")
    print(f"{'ranges dropped':<26}{small.dropped[0]:>18}{big.dropped[0]:>18}")
    print(f"{'rows dropped with them':<26}{small.dropped[1]:>18,}{big.dropped[1]:>18,}")
    print(f"{'database (GB)':<26}{small.disk_bytes / 2**30:>18.2f}{big.disk_bytes / 2**30:>18.2f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument(
        "--database",
        default=os.environ.get(
            "BACKFILLER_BENCH_DATABASE_URL", "postgresql+psycopg://postgres@127.0.0.1:5432/postgres"
        ),
    )
    parser.add_argument("--runs", type=int, default=5_000_000)
    parser.add_argument("--small", type=int, default=100_000)
    parser.add_argument("--requests", type=int, default=40)
    parser.add_argument("--dispatch", type=int, default=10_000)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--prune-seconds", type=float, default=20.0)
    parser.add_argument("--keep", action="store_true")
    parser.add_argument(
        "--range-backfills",
        type=int,
        help="backfills in each history range (default: all in one, a day's launches)",
    )
    args = parser.parse_args()
    print(f"load average before: {os.getloadavg()}", flush=True)
    small = measure(args.database, args.small, args)
    big = measure(args.database, args.runs, args)
    report(small, big)
    print(f"load average after: {os.getloadavg()}")


if __name__ == "__main__":
    main()
