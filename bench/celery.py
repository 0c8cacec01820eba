"""Benchmark of the Celery launcher: end-to-end runs per second, beside the local launcher.

On PostgreSQL and RabbitMQ (both on 127.0.0.1), a no-op backfill of ``--size`` partitions
(10,000 by default) is launched and timed from the launch mutation to COMPLETED_SUCCESS:

1. the local launcher with 2 worker processes (the daemon in this process);
2. the Celery launcher (the daemon in this process) with 2 Celery workers
   (``backfiller worker --concurrency C``, separate processes), then with 1 and 3 workers.

Workers are started and ready before the clock starts. For each run it prints runs/s and the
CPU seconds spent by the daemon (this process) and by the Celery workers (their processes), to
show where the time goes. Prints figures; asserts nothing.

Run with ``python -m bench.celery`` (``--quick`` for 2,000 partitions). Needs PostgreSQL
(``--database``, a server URL; a database is created and dropped) and RabbitMQ (``--broker``).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from sqlalchemy import create_engine, text
from sqlalchemy.engine import make_url

from backfiller.daemon import Daemon, DaemonSettings
from backfiller.daemon.state import new_owner
from backfiller.domain import BackfillState
from backfiller.launchers import Launcher, LocalLauncher
from backfiller.launchers.celery.launcher import CeleryLauncher
from backfiller.storage import Database
from backfiller.storage.migrations import upgrade_database
from backfiller.storage.records import BackfillRecord
from bench.daemon import TARGET, Api
from bench.defs import definitions

REPO = Path(__file__).resolve().parent.parent
TICKS = os.sysconf("SC_CLK_TCK")


@contextmanager
def fresh_postgres(server_url: str) -> Iterator[str]:
    base = make_url(server_url).set(drivername="postgresql+psycopg")
    name = f"bf_bench_{uuid.uuid4().hex[:8]}"
    admin = create_engine(base, isolation_level="AUTOCOMMIT")
    with admin.connect() as conn:
        conn.execute(text(f'CREATE DATABASE "{name}"'))
    url = base.set(database=name).render_as_string(hide_password=False)
    upgrade_database(url)
    try:
        yield url
    finally:
        with admin.connect() as conn:
            conn.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
        admin.dispose()


def cpu_seconds(pid: int) -> float:
    """User + system CPU of a process and of its children (live or reaped)."""
    total = 0.0
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        if int(stat.parent.name) == pid or int(fields[1]) == pid:
            total += (int(fields[11]) + int(fields[12]) + int(fields[13]) + int(fields[14])) / TICKS
    return total


class Workers:
    """``backfiller worker`` processes on their own queue."""

    def __init__(self, broker: str, queue: str, count: int, concurrency: int) -> None:
        env = {**os.environ, "PYTHONPATH": str(REPO), "BACKFILLER_CELERY_QUEUE": queue}
        args = ["worker", "--definitions", TARGET, "--broker", broker, "--loglevel", "INFO"]
        args += ["--concurrency", str(concurrency)]
        self.logs = [Path(f"/tmp/bench-celery-worker-{queue}-{i}.log") for i in range(count)]
        self.procs = [
            subprocess.Popen(
                [sys.executable, "-m", "backfiller", *args],
                env=env,
                stdout=log.open("w"),
                stderr=subprocess.STDOUT,
            )
            for log in self.logs
        ]

    def wait_ready(self) -> None:
        while not all("ready." in log.read_text() for log in self.logs):
            time.sleep(0.1)

    def cpu(self) -> float:
        return sum(cpu_seconds(p.pid) for p in self.procs)

    def stop(self) -> None:
        for proc in self.procs:
            proc.terminate()
        for proc, log in zip(self.procs, self.logs, strict=True):
            proc.wait(30)
            log.unlink(missing_ok=True)


async def timed_backfill(url: str, launcher: Launcher, size: int) -> tuple[float, float]:
    """(seconds from launch to COMPLETED_SUCCESS, CPU seconds of this process meanwhile)."""
    database = Database(url)
    api = Api(database)
    daemon = Daemon(database, definitions, launcher, DaemonSettings(shutdown_grace_seconds=5))
    stop = asyncio.Event()
    task = asyncio.create_task(daemon.run(stop))
    await asyncio.sleep(1.0)  # the lease is taken, the launcher connected
    cpu0, started = time.process_time(), time.perf_counter()
    pk = await api.launch(size)
    while True:
        await asyncio.sleep(0.1)
        async with database.read() as session:
            record = await session.get(BackfillRecord, pk, populate_existing=True)
        assert record is not None
        if record.status is BackfillState.COMPLETED_SUCCESS:
            break
    took, cpu = time.perf_counter() - started, time.process_time() - cpu0
    stop.set()
    await task
    await database.dispose()
    return took, cpu


async def local(server: str, size: int) -> None:
    with fresh_postgres(server) as url:
        launcher = LocalLauncher(TARGET, 2).start()
        while launcher.ready_workers() < 2:  # noqa: ASYNC110 (the launcher has no event)
            await asyncio.sleep(0.05)
        took, cpu = await timed_backfill(url, launcher, size)
    print(
        f"local launcher, 2 workers:        {size / took:6.0f} runs/s  ({took:6.1f} s;"
        f" daemon+pool CPU {cpu:5.1f} s in this process)"
    )


async def celery(server: str, broker: str, size: int, workers: int, concurrency: int) -> None:
    queue = f"bench-{uuid.uuid4().hex[:8]}"
    os.environ["BACKFILLER_CELERY_QUEUE"] = queue
    pool = Workers(broker, queue, workers, concurrency)
    try:
        pool.wait_ready()
        with fresh_postgres(server) as url:
            launcher = CeleryLauncher(broker, definitions, new_owner(), max_active=512).start()
            cpu0 = pool.cpu()
            took, cpu = await timed_backfill(url, launcher, size)
            worker_cpu = pool.cpu() - cpu0
    finally:
        pool.stop()
    print(
        f"celery, {workers} worker(s) x {concurrency}:     {size / took:6.0f} runs/s  "
        f"({took:6.1f} s; daemon CPU {cpu:5.1f} s, workers' CPU {worker_cpu:5.1f} s)"
    )


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--size", type=int, default=10_000)
    parser.add_argument("--concurrency", type=int, default=4)
    parser.add_argument("--database", default="postgresql+psycopg://postgres@127.0.0.1:5432/test")
    parser.add_argument("--broker", default="amqp://guest:guest@127.0.0.1:5672//")
    args = parser.parse_args()
    size = 2_000 if args.quick else args.size
    print(f"{size:,}-partition no-op backfill, PostgreSQL, launch to COMPLETED_SUCCESS")
    print(f"machine: {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f} at start")
    await local(args.database, size)
    for workers in (2, 1, 3):
        await celery(args.database, args.broker, size, workers, args.concurrency)


if __name__ == "__main__":
    asyncio.run(main())
