"""CPU cost of a launch and of a run, in process: for overhead comparisons on a busy machine.

Wall-clock benchmarks (``bench.launch``, ``bench.daemon``) swing by 2x or more when other work
shares the CPUs; the CPU time a process spends per launch or per run swings much less. This
prints, for ``BENCH_COUNT`` launches through the whole ASGI application (middleware, access
gate, GraphQL, insert) and for a no-op backfill of ``BENCH_RUNS`` partitions driven by a
``Daemon`` with the in-process launcher, the process CPU time per launch and per run. Run it
with ``python -m bench.overhead``; compare two versions of the code by running it against each
(``PYTHONPATH`` pointing at the other tree). Not a test: it asserts nothing.

What the metrics cost: ``python -m bench.overhead --metrics-off`` measures the same code with
every metric call made a no-op (prometheus-client's record methods, the pool listeners, the
GraphQL extension's field hook, the daemon's observe functions) and without the daemon's
refresh of the database gauges; and
``python -m bench.overhead --alternate N`` runs N rounds of each, metrics on and off
alternately, each in a fresh process, and prints the medians and the overhead.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from bench.launch import launch_body


async def launches(count: int) -> float:
    """CPU ms per in-process launch (1 partition)."""
    from bench._inproc import app_on_database, post

    body = launch_body(1)
    async with app_on_database() as app:

        async def call() -> None:
            answer = await post(app, body)
            assert answer["data"]["launchBackfill"]["userErrors"] == []

        for _ in range(100):
            await call()
        began = time.process_time()
        for _ in range(count):
            await call()
        return (time.process_time() - began) * 1000 / count


WARM_UP_RUNS = 200


async def runs(count: int) -> float:
    """CPU ms per run of a no-op backfill, daemon and in-process launcher together.

    A first backfill of ``WARM_UP_RUNS`` runs warms the daemon up (statement compilation, the
    first pass of every task), as the launch figure's first 100 launches do; the figure is
    the CPU from the second backfill's insert to its end."""
    from backfiller.cli.server import prepare_database
    from backfiller.daemon import Daemon
    from backfiller.launchers.inline import InlineLauncher
    from backfiller.storage import Database
    from bench.defs import definitions

    with tempfile.TemporaryDirectory() as tmp:
        url = prepare_database(f"sqlite:///{Path(tmp) / 'bench.db'}")
        database = Database(url)
        daemon = Daemon(database, definitions, InlineLauncher(definitions, max_active=64))
        try:  # what `backfiller daemon` adds, in the versions that have it
            from backfiller.notify.notifier import NotifierSettings
            from backfiller.notify.wiring import install_notifier
            from backfiller.web.daemon_ops import observe_daemon

            if not _metrics_are_off:
                observe_daemon(daemon, None)  # the database gauges' refresh task
            install_notifier(daemon, NotifierSettings())
        except ImportError:
            pass
        stop = asyncio.Event()
        task = asyncio.create_task(daemon.run(stop))
        try:
            await _backfill_to_its_end(database, 0, WARM_UP_RUNS)
            began = time.process_time()
            await _backfill_to_its_end(database, WARM_UP_RUNS, count)
            spent = time.process_time() - began
        finally:
            stop.set()
            await task
            await database.dispose()
        return spent * 1000 / count


async def _backfill_to_its_end(database: Any, first: int, count: int) -> None:
    """Insert a backfill of ``count`` partitions of the no-op job from index ``first``; wait
    until it ends."""
    from datetime import UTC, datetime

    from backfiller.domain import Order, Reprocess, SelectionKind
    from backfiller.storage.launches import NewBackfill
    from backfiller.storage.repositories import BackfillRepository
    from bench.defs import definitions

    job = definitions.get_job("hourly_history")
    assert job is not None
    space = job.partitions.key_space(datetime.now(UTC))
    new = NewBackfill(
        job_name=job.name,
        selection_kind=SelectionKind.RANGE,
        range_start=space.key_at(first),
        range_end=space.key_at(first + count - 1),
        keys=None,
        partitions_fingerprint=job.partitions.fingerprint(),
        first_index=first,
        total=count,
        reprocess=Reprocess.ALL,
        order=Order.OLDEST_FIRST,
        max_concurrent_runs=None,
        run_config=None,
        tags=[],
        title=None,
        description=None,
        idempotency_key=None,
        request_fingerprint=f"bench-{first}",
        creator=None,
    )
    async with database.write() as session:
        record = await BackfillRepository(session).add(new, datetime.now(UTC))
    while True:
        await asyncio.sleep(0.05)
        async with database.read() as session:
            found = await BackfillRepository(session).get(record.id)
        if found is not None and found.status.is_terminal:
            return


_metrics_are_off = False
_saved: list[tuple[Any, str, Any]] = []


def metrics_off() -> None:
    """Make every metric call of this process a no-op, and leave out the daemon's refresh of
    the database gauges, until :func:`metrics_on`."""
    global _metrics_are_off
    if _metrics_are_off:
        return
    _metrics_are_off = True
    from prometheus_client import Counter, Gauge, Histogram
    from prometheus_client.metrics import MetricWrapperBase
    from sqlalchemy import event
    from sqlalchemy.pool import Pool

    from backfiller.daemon import loop
    from backfiller.observability import api_metrics, daemon_metrics, db_metrics

    def nothing(*_: Any, **__: Any) -> None:
        return None

    def itself(self: Any, *_: Any, **__: Any) -> Any:
        return self

    def replace(owner: Any, name: str, value: Any) -> None:
        _saved.append((owner, name, owner.__dict__[name]))
        setattr(owner, name, value)

    replace(MetricWrapperBase, "labels", itself)
    for cls, names in (
        (Counter, ["inc"]),
        (Gauge, ["inc", "dec", "set"]),
        (Histogram, ["observe"]),
    ):
        for name in names:
            replace(cls, name, nothing)
    for name in ("_on_checkout", "_on_checkin", "_on_connect"):
        event.remove(Pool, name.removeprefix("_on_"), getattr(db_metrics, name))
    _saved.append((api_metrics.OperationMetrics, "resolve", api_metrics.OperationMetrics.resolve))
    del api_metrics.OperationMetrics.resolve  # the schema then hooks no field for metrics
    replace(api_metrics, "observe_http", nothing)
    replace(loop, "observe_task", nothing)
    for name in ("observe_task", "observe_claim", "runs_submitted", "observe_report"):
        replace(daemon_metrics, name, nothing)
    replace(daemon_metrics, "observe_runs", nothing)


def metrics_on() -> None:
    """Undo :func:`metrics_off`."""
    global _metrics_are_off
    if not _metrics_are_off:
        return
    from sqlalchemy import event
    from sqlalchemy.pool import Pool

    from backfiller.observability import db_metrics

    while _saved:
        owner, name, value = _saved.pop()
        setattr(owner, name, value)
    for name in ("_on_checkout", "_on_checkin", "_on_connect"):
        event.listen(Pool, name.removeprefix("_on_"), getattr(db_metrics, name))
    _metrics_are_off = False


async def paired(rounds: int, count: int, run_count: int) -> None:
    """In one process, metrics on and off in turn (the order flipped every round): each
    round's on/off ratio compares two measurements taken moments apart."""
    from backfiller.observability import api_metrics  # noqa: F401  (metrics registered)

    ratios: tuple[list[float], list[float]] = ([], [])
    for i in range(rounds):
        found: dict[bool, tuple[float, float]] = {}
        for off in (False, True) if i % 2 == 0 else (True, False):
            metrics_off() if off else metrics_on()
            found[off] = (await launches(count), await runs(run_count))
        metrics_on()
        for k in (0, 1):
            ratios[k].append(found[False][k] / found[True][k])
        print(
            f"round {i + 1}: launch on {found[False][0]:.3f} / off {found[True][0]:.3f} ms, "
            f"run on {found[False][1]:.3f} / off {found[True][1]:.3f} ms"
        )
    for label, values in (("launch", ratios[0]), ("run", ratios[1])):
        print(
            f"{label}: metrics add {(statistics.median(values) - 1) * 100:+.1f}% (median of "
            f"{rounds} paired rounds; rounds {(min(values) - 1) * 100:+.1f}% to "
            f"{(max(values) - 1) * 100:+.1f}%)"
        )


def hook_costs(repeat: int = 7, number: int = 2000) -> tuple[float, float]:
    """CPU us of the metric calls one launch makes, and one run (in batches of 64, as the
    in-process launcher reports them): the best of ``repeat`` timings, the least disturbed
    by the rest of a shared machine."""
    from datetime import UTC, datetime
    from types import SimpleNamespace

    from backfiller.domain import Outcome, RunFinished
    from backfiller.observability import api_metrics, daemon_metrics, db_metrics, tracing

    def plain(root: Any, info: Any) -> Any:
        return root

    payload = SimpleNamespace(user_errors=[])
    root = SimpleNamespace(path=SimpleNamespace(prev=None), field_name="launchBackfill")
    leaf = SimpleNamespace(path=SimpleNamespace(prev=root.path), field_name="id")
    extension = object.__new__(api_metrics.OperationMetrics)
    hook = api_metrics.OperationMetrics.resolve

    def one_launch() -> None:  # the Operations middleware, a pool checkout, six fields
        api_metrics.route_of("/graphql/v1")
        api_metrics.HTTP_IN_PROGRESS.inc()
        tracing.enabled()
        db_metrics._on_checkout()
        hook(extension, plain, payload, root)
        for _ in range(5):
            hook(extension, plain, payload, leaf)
        db_metrics._on_checkin()
        api_metrics.HTTP_IN_PROGRESS.dec()
        api_metrics.observe_http("graphql", "POST", 200, 0.003)

    def six_plain_fields() -> None:  # what the fields cost without the hook
        for _ in range(6):
            plain(payload, leaf)

    now = datetime.now(UTC)
    ids = list(range(64))
    started = [(i, now) for i in ids]
    finished = [RunFinished(i, now, Outcome.SUCCESS) for i in ids]
    report = SimpleNamespace(claimed=64, succeeded=64)

    def one_batch() -> None:  # 64 runs: claim, start, end; ~5 task passes, ~9 transactions
        daemon_metrics.observe_claim(0.001)
        daemon_metrics.runs_submitted(ids)
        daemon_metrics.observe_runs(started, finished)
        daemon_metrics.observe_report(report)
        for _ in range(5):
            daemon_metrics.observe_task("results", 0.001, True)
        for _ in range(9):
            db_metrics._on_checkout()
            db_metrics._on_checkin()

    def best(f: Any) -> float:
        times = []
        for _ in range(repeat):
            began = time.process_time()
            for _ in range(number):
                f()
            times.append((time.process_time() - began) / number * 1e6)
        return min(times)

    return best(one_launch) - best(six_plain_fields), best(one_batch) / 64


def measure(count: int, run_count: int) -> tuple[float, float]:
    return asyncio.run(launches(count)), asyncio.run(runs(run_count))


def alternate(rounds: int) -> None:
    """Rounds of metrics on and off, alternately, each in a fresh process; the medians."""
    found: dict[str, tuple[list[float], list[float]]] = {"on": ([], []), "off": ([], [])}
    for i in range(rounds):
        for mode in ("on", "off") if i % 2 == 0 else ("off", "on"):
            command = [sys.executable, "-m", "bench.overhead", "--quiet"]
            command += ["--metrics-off"] if mode == "off" else []
            out = subprocess.run(command, check=True, capture_output=True, text=True).stdout
            launch, run = (float(x) for x in out.split())
            found[mode][0].append(launch)
            found[mode][1].append(run)
            print(f"round {i + 1} metrics {mode:3}: {launch:.3f} ms/launch  {run:.3f} ms/run")
    for label, index in (("launch", 0), ("run", 1)):
        on = statistics.median(found["on"][index])
        off = statistics.median(found["off"][index])
        print(
            f"{label}: metrics on p50 {on:.3f} ms CPU, off p50 {off:.3f} ms CPU: "
            f"{(on / off - 1) * 100:+.1f}%"
        )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--metrics-off", action="store_true", help="metric calls as no-ops")
    parser.add_argument("--alternate", type=int, metavar="N", help="N rounds, on and off")
    parser.add_argument("--paired", type=int, metavar="N", help="N rounds on/off, one process")
    parser.add_argument("--hooks", action="store_true", help="CPU of the metric calls alone")
    parser.add_argument("--quiet", action="store_true", help="print the two figures only")
    args = parser.parse_args()
    count = int(os.environ.get("BENCH_COUNT", "1000"))
    run_count = int(os.environ.get("BENCH_RUNS", "3000"))
    if args.hooks:
        launch_us, run_us = hook_costs()
        launch, run = measure(count, run_count)
        print(
            f"metric calls per launch: {launch_us:.1f} us CPU, "
            f"{launch_us / 10 / launch:.2f}% of a launch"
        )
        print(f"metric calls per run: {run_us:.1f} us CPU, {run_us / 10 / run:.2f}% of a run")
        print(f"(a launch: {launch:.3f} ms CPU, a run: {run:.3f} ms CPU, metrics on)")
        return
    if args.paired:
        asyncio.run(paired(args.paired, count, run_count))
        return
    if args.alternate:
        alternate(args.alternate)
        return
    if args.metrics_off:
        metrics_off()
    launch, run = measure(count, run_count)
    if args.quiet:
        print(f"{launch:.4f} {run:.4f}")
        return
    import backfiller

    print(f"code: {Path(backfiller.__file__).parent.parent}")
    print(f"metrics: {'off' if args.metrics_off else 'on'}")
    print(f"launch: {launch:.3f} ms CPU per launch (n={count})")
    print(f"runs: {run:.3f} ms CPU per run (n={run_count})")


if __name__ == "__main__":
    main()
