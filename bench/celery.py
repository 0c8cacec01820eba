"""Benchmark of the Celery launcher: end-to-end runs per second, beside the local launcher.

On PostgreSQL and RabbitMQ, then Redis (all on 127.0.0.1), a no-op backfill of ``--size`` partitions
(10,000 by default) is launched and timed from the launch mutation to COMPLETED_SUCCESS:

1. the local launcher with 2 worker processes (the daemon in this process);
2. the Celery launcher (the daemon in this process) with 2 Celery workers
   (``backfiller worker --concurrency C``, separate processes), then with 1 and 3 workers.

Workers are started and ready before the clock starts. For each run it prints runs/s and the
CPU per run spent by each of the daemon's threads (this process: the event loop, the
launcher's broker thread, its gate thread), by the Celery workers' main and pool processes,
by the PostgreSQL backends of the benchmark's database and by RabbitMQ (when it runs on this
machine), to show where the time goes, and how many runs the launcher published again (its
``backfiller_launcher_republished_total`` counter: under normal operation, near none). It ends
with the runs/s of local, Celery on RabbitMQ and Celery on Redis side by side, and their
ratios. Prints figures; asserts nothing.

Options: ``--workers 2,1,3`` (the Celery worker counts, in order), ``--runs-per-task 8,1`` (the
daemon's setting, each in turn for each worker count: short runs together, then one a task),
``--concurrency`` (processes per worker), ``--no-local`` (skip the local launcher),
``--profile FILE`` (a cProfile of the daemon's threads, for ``pstats``), ``--unsigned-too``
(each Celery run once more with ``--insecure-broker``: messages unsigned, credentials in
clear, to show what signing costs), ``--run-seconds S`` (each run sleeps S seconds instead
of doing nothing: runs then wait on the queue for a while, the case where the launcher once
took many for lost and published them again), ``--max-active`` (the Celery launcher's runs in
flight, 512).

Daemon and workers share a key made for the run (``$BACKFILLER_BROKER_KEY``, unless set); the
broker's URL reaches the workers through their environment.

Run with ``python -m bench.celery`` (``--quick`` for 2,000 partitions). Needs PostgreSQL
(``--database``, a server URL; a database is created and dropped), RabbitMQ and Redis
(``--broker``, comma-separated URLs).
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import os
import pstats
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from backfiller.daemon import Daemon, DaemonSettings
from backfiller.domain import BackfillState
from backfiller.launchers import Launcher, LocalLauncher
from backfiller.launchers.celery import envelope
from backfiller.launchers.celery.launcher import CeleryLauncher
from backfiller.observability import launcher_metrics
from backfiller.storage import Database
from backfiller.storage.migrations import upgrade_database
from backfiller.storage.records import BackfillRecord
from bench.daemon import TARGET, Api
from bench.databases import scratch_postgres
from bench.defs import definitions
from bench.proc_cpu import database_cpu, stat_cpu, stat_fields

REPO = Path(__file__).resolve().parent.parent


@contextmanager
def fresh_postgres(server_url: str) -> Iterator[str]:
    """A new database of its own on ``server_url``'s server, migrated (dropped after)."""
    with scratch_postgres(server_url) as url:
        upgrade_database(url)
        yield url


def cpu_seconds(pid: int) -> tuple[float, float]:
    """CPU (user + system) of a process with its reaped children, and of its live children."""
    main = pool = 0.0
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat_fields(stat)
        except (OSError, IndexError):
            continue
        if int(stat.parent.name) == pid:
            main += stat_cpu(fields, children=True)
        elif int(fields[1]) == pid:
            pool += stat_cpu(fields, children=True)
    return main, pool


def broker_cpu() -> float | None:
    """CPU seconds of RabbitMQ's Erlang VM on this machine, when it runs here (and is visible)."""
    total = None
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            name, _, rest = stat.read_text().partition(")")
        except OSError:
            continue
        if name.endswith("(beam.smp"):
            total = (total or 0.0) + stat_cpu(rest.split(), children=False)
    return total


def thread_cpu() -> dict[str, float]:
    """CPU seconds of each of this process's threads, by thread name."""
    names = {t.native_id: t.name for t in threading.enumerate()}
    found: dict[str, float] = {}
    for stat in Path("/proc/self/task").glob("*/stat"):
        try:
            fields = stat_fields(stat)
        except (OSError, IndexError):
            continue
        name = names.get(int(stat.parent.name), "other")
        found[name] = found.get(name, 0.0) + stat_cpu(fields, children=False)
    return found


class Workers:
    """``backfiller worker`` processes on their own queue."""

    def __init__(
        self, broker: str, queue: str, count: int, concurrency: int, signed: bool = True
    ) -> None:
        env = {**os.environ, "PYTHONPATH": str(REPO), "BACKFILLER_CELERY_QUEUE": queue}
        env["BACKFILLER_BROKER_URL"] = broker
        args = ["worker", "--definitions", TARGET, "--loglevel", "INFO"]
        args += ["--concurrency", str(concurrency)]
        if not signed:
            args.append("--insecure-broker")
            env.pop(envelope.KEY_ENV, None)
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

    def cpu(self) -> tuple[float, float]:
        """CPU seconds of the workers' main processes, and of their pool processes."""
        pairs = [cpu_seconds(p.pid) for p in self.procs]
        return sum(m for m, _ in pairs), sum(c for _, c in pairs)

    def stop(self) -> None:
        for proc in self.procs:
            proc.terminate()
        for proc, log in zip(self.procs, self.logs, strict=True):
            proc.wait(30)
            log.unlink(missing_ok=True)


class Profiles:
    """cProfile of the daemon's threads (the event loop and the launcher's threads), if asked."""

    def __init__(self, path: str | None) -> None:
        self.path = path
        self.done: list[cProfile.Profile] = []

    def wrap(self, launcher: Launcher) -> None:
        if self.path is None or not isinstance(launcher, CeleryLauncher):
            return
        # The broker's thread and the gate's (see launchers/celery/launcher.py, grants.py).
        for owner, name in ((launcher, "_run"), (launcher.grants, "run")):
            setattr(owner, name, self._profiled(getattr(owner, name)))

    def _profiled(self, function: Callable[[], None]) -> Callable[[], None]:
        def profiled() -> None:
            profile = cProfile.Profile()
            profile.enable()
            try:
                function()
            finally:
                profile.disable()
                self.done.append(profile)

        return profiled

    @contextmanager
    def main_thread(self) -> Iterator[None]:
        if self.path is None:
            yield
            return
        profile = cProfile.Profile()
        profile.enable()
        try:
            yield
        finally:
            profile.disable()
            self.done.append(profile)

    def dump(self) -> None:
        if self.path is None or not self.done:
            return
        stats = pstats.Stats(self.done[0])
        for profile in self.done[1:]:
            stats.add(profile)
        stats.dump_stats(self.path)
        print(f"  profile of the daemon's threads written to {self.path}")


RUN_SECONDS = 0.0
"""How long each run sleeps (``--run-seconds``; 0: a no-op job)."""
MAX_ACTIVE = 512
"""The Celery launcher's ``max_active`` (``--max-active``)."""


async def timed_backfill(
    url: str, launcher: Launcher, size: int, profiles: Profiles
) -> tuple[float, dict[str, float]]:
    """(seconds from launch to COMPLETED_SUCCESS, CPU seconds of this process's threads)."""
    database = Database(url)
    api = Api(database)
    daemon = Daemon(database, definitions, launcher, DaemonSettings(shutdown_grace_seconds=5))
    stop = asyncio.Event()
    task = asyncio.create_task(daemon.run(stop))
    await asyncio.sleep(1.0)  # the lease is taken, the launcher connected
    cpu0, started, db0 = thread_cpu(), time.perf_counter(), database_cpu(url)
    with profiles.main_thread():
        if RUN_SECONDS:
            pk = await api.launch(size, "hourly_sleep", {"seconds": RUN_SECONDS})
        else:
            pk = await api.launch(size)
        while True:
            await asyncio.sleep(0.1)
            async with database.read() as session:
                record = await session.get(BackfillRecord, pk, populate_existing=True)
            assert record is not None
            if record.status is BackfillState.COMPLETED_SUCCESS:
                break
    took, cpu1 = time.perf_counter() - started, thread_cpu()
    cpu1["PostgreSQL"] = database_cpu(url) - db0
    stop.set()
    await task
    await database.dispose()
    return took, {name: cpu1[name] - cpu0.get(name, 0.0) for name in cpu1}


def by_thread(cpu: dict[str, float], size: int) -> str:
    """The daemon's CPU per run, by thread (ms)."""
    parts = [f"{name} {1000 * seconds / size:.2f}" for name, seconds in sorted(cpu.items())]
    return ", ".join(parts)


async def local(server: str, size: int) -> float:
    with fresh_postgres(server) as url:
        # Given the database as ``backfiller daemon`` gives it (its backlog is the database's).
        launcher = LocalLauncher(TARGET, 2, database_url=url).start()
        while launcher.ready_workers() < 2:  # noqa: ASYNC110 (the launcher has no event)
            await asyncio.sleep(0.05)
        took, cpu = await timed_backfill(url, launcher, size, Profiles(None))
    database = cpu.pop("PostgreSQL")
    total = sum(cpu.values())
    print(
        f"local launcher, 2 workers:        {size / took:6.0f} runs/s  ({took:6.1f} s;"
        f" daemon+pool CPU {total:5.1f} s in this process, PostgreSQL {database:5.1f} s)"
    )
    return size / took


async def celery(
    server: str,
    broker: str,
    size: int,
    workers: int,
    concurrency: int,
    runs_per_task: int,
    profiles: Profiles,
    signed: bool = True,
) -> tuple[float, float]:
    """Runs/s, and the runs the launcher published again (its republished counter)."""
    queue = f"bench-{uuid.uuid4().hex[:8]}"
    os.environ["BACKFILLER_CELERY_QUEUE"] = queue
    envelope.configure(envelope.key_from(os.environ[envelope.KEY_ENV], None) if signed else None)
    pool = Workers(broker, queue, workers, concurrency, signed)
    try:
        pool.wait_ready()
        with fresh_postgres(server) as url:
            launcher = CeleryLauncher(
                broker, definitions, max_active=MAX_ACTIVE, runs_per_task=runs_per_task
            )
            profiles.wrap(launcher)
            launcher.start()
            main0, pool0, broker0 = *pool.cpu(), broker_cpu()
            again0 = launcher_metrics.republished_total()
            took, cpu = await timed_backfill(url, launcher, size, profiles)
            main1, pool1, broker1 = *pool.cpu(), broker_cpu()
            again = launcher_metrics.republished_total()
    finally:
        pool.stop()
    database = cpu.pop("PostgreSQL")
    daemon = sum(cpu.values())
    worker = main1 - main0 + pool1 - pool0
    rabbit = ""
    if broker0 is not None and broker1 is not None and broker.startswith("amqp"):
        rabbit = f"; RabbitMQ {1000 * (broker1 - broker0) / size:.2f} ms"
    again = {reason: n - again0.get(reason, 0.0) for reason, n in again.items()}
    republished = sum(again.values())
    reasons = ", ".join(f"{reason} {n:.0f}" for reason, n in sorted(again.items()) if n)
    print(
        f"celery on {broker_name(broker)}, {workers} worker(s) x {concurrency}, up to "
        f"{runs_per_task} run(s) a task, {'signed' if signed else 'UNSIGNED'}: "
        f"{size / took:6.0f} runs/s  "
        f"({took:6.1f} s; daemon CPU {daemon:5.1f} s, workers' CPU {worker:5.1f} s)\n"
        f"  per run: daemon {1000 * daemon / size:.2f} ms ({by_thread(cpu, size)}); "
        f"workers {1000 * worker / size:.2f} ms (Celery's main processes "
        f"{1000 * (main1 - main0) / size:.2f}, pool processes {1000 * (pool1 - pool0) / size:.2f})"
        f"; PostgreSQL {1000 * database / size:.2f} ms{rabbit}\n"
        f"  republished: {republished:.0f} of {size} runs ({100 * republished / size:.2f}%"
        f"{'; ' + reasons if reasons else ''})"
    )
    profiles.dump()
    return size / took, republished


def broker_name(url: str) -> str:
    return "Redis" if url.startswith("redis") else "RabbitMQ"


def summary(
    local_rate: float | None, rates: dict[str, float], republished: dict[str, float]
) -> None:
    """Runs/s of each launcher (the first configuration of each broker), with the ratios the
    launcher aims at: Celery on RabbitMQ at least 60% of local, Redis at least 70% of RabbitMQ."""
    print("summary (first configuration of each broker):")
    if local_rate is not None:
        print(f"  local            {local_rate:6.0f} runs/s")
    for name, rate in rates.items():
        print(f"  celery {name:9s} {rate:6.0f} runs/s, republished {republished[name]:.0f}")
    rabbit, redis = rates.get("RabbitMQ"), rates.get("Redis")
    if local_rate and rabbit:
        print(f"  Celery/RabbitMQ vs local:    {100 * rabbit / local_rate:5.1f}% (target >= 60%)")
    if local_rate and redis:
        print(f"  Celery/Redis vs local:       {100 * redis / local_rate:5.1f}%")
    if rabbit and redis:
        print(f"  Celery/Redis vs RabbitMQ:    {100 * redis / rabbit:5.1f}% (target >= 70%)")


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--size", type=int, default=10_000)
    parser.add_argument("--concurrency", type=int, default=4)
    parser.add_argument("--workers", default="2,1,3", help="Celery worker counts, in order")
    parser.add_argument(
        "--runs-per-task",
        default="8",
        help="the daemon's --runs-per-task values, in order, for each worker count (8,1: "
        "short runs together, then one run a task)",
    )
    parser.add_argument("--no-local", action="store_true", help="skip the local launcher")
    parser.add_argument("--profile", help="write a cProfile of the daemon's threads here")
    parser.add_argument("--database", default="postgresql+psycopg://postgres@127.0.0.1:5432/test")
    parser.add_argument(
        "--broker",
        default="amqp://guest:guest@127.0.0.1:5672//,redis://127.0.0.1:6379/3",
        help="broker URLs, comma-separated, each in turn (default: RabbitMQ, then Redis)",
    )
    parser.add_argument("--unsigned-too", action="store_true", help="also without a key")
    parser.add_argument(
        "--run-seconds",
        type=float,
        default=0.0,
        help="each run sleeps this long (default 0: no-op runs); with runs that take time, "
        "runs wait on the queue for a while, where the launcher must not take them for lost",
    )
    parser.add_argument(
        "--max-active", type=int, default=512, help="the Celery launcher's runs in flight"
    )
    args = parser.parse_args()
    global RUN_SECONDS, MAX_ACTIVE
    RUN_SECONDS, MAX_ACTIVE = args.run_seconds, args.max_active
    os.environ.setdefault(envelope.KEY_ENV, envelope.generate_key())
    size = 2_000 if args.quick else args.size
    kind = f"{RUN_SECONDS:g} s a run" if RUN_SECONDS else "no-op"
    print(f"{size:,}-partition {kind} backfill, PostgreSQL, launch to COMPLETED_SUCCESS")
    print(f"machine: {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f} at start")
    local_rate = None if args.no_local else await local(args.database, size)
    rates: dict[str, float] = {}
    republished: dict[str, float] = {}
    for broker in args.broker.split(","):
        for workers in (int(w) for w in args.workers.split(",")):
            for runs_per_task in (int(r) for r in args.runs_per_task.split(",")):
                for signed in (True, False) if args.unsigned_too else (True,):
                    profiles = Profiles(args.profile)
                    rate, again = await celery(
                        args.database,
                        broker,
                        size,
                        workers,
                        args.concurrency,
                        runs_per_task,
                        profiles,
                        signed,
                    )
                    rates.setdefault(broker_name(broker), rate)
                    republished.setdefault(broker_name(broker), again)
    summary(local_rate, rates, republished)
    print(f"load average {os.getloadavg()[0]:.1f} at the end")


if __name__ == "__main__":
    asyncio.run(main())
