"""What a user feels, measured through the processes the command line starts, over HTTP.

``backfiller serve`` and ``backfiller daemon`` (the local pool of 2 workers, or the Celery
launcher with ``backfiller worker`` processes) run as separate processes on SQLite or on a
PostgreSQL database of their own, started from a checkout of the code (``bench.stack_procs``);
the workloads (``bench.stack_work``) talk to them over HTTP only. Parts (``--only``):

- ``first-run``: a daemon is started and its readiness awaited (its ``/readyz``; a release
  without one: its "running" line, then until it and its workers are idle); then three
  one-partition backfills, one after another: when the run started and ended, and when the API
  said so, after the launch. The first is the daemon's first backfill. SQLite and PostgreSQL.
- ``dispatch``: a ``--size``-partition no-op daily backfill (10,000) on a daemon that is ready
  and idle: runs/s and the CPU of each process per run; beside it, the same backfill with the
  daemon in one process (``bench.daemon --only throughput``: the in-process figure).
- ``keys``: for each partition kind, launches of 9,000 keys and of 1 key taken in turn.
- ``launch``: one-partition launches one at a time, launches/s from 8 clients, a page of 100.
- ``assets``: a chain of 3 assets over 30 days: the first run, and the time to the end.
- ``celery``: ``first-run`` and ``dispatch`` (``--celery-size``) with the Celery launcher
  (PostgreSQL, ``--broker``), 2 workers x 4.
- ``celery-daemons``: the Celery ``dispatch`` with one daemon, then two daemons sharing the one
  backfill (same workers and size; the order alternates by round). Not part of the default
  run.

``--against REV`` (repeatable) runs every part on the code of ``REV`` as well, in a ``git
worktree`` with its own virtual environment, alternating with this checkout round by round
(the order reverses every round), so that all are measured in the same minutes; a summary's
ratios are this checkout's figure over each other side's. Each figure is printed with the
CPUs that the rest of the machine kept busy meanwhile and the load average. Prints figures;
asserts nothing. Run with ``python -m bench.stack --against 0ccc82d`` (``--rounds``).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path

from bench import stack_work as work
from bench.databases import scratch_postgres
from bench.stack_procs import Checkout, Stack, checkout_of, running
from bench.stack_procs import this_checkout as this_code

PARTS = ("first-run", "dispatch", "keys", "launch", "assets", "celery")
"""The parts run by default (``celery-daemons`` is asked for by name)."""
KEY_COUNT = 9_000
Figures = dict[str, float]


class Report:
    """Figures by (part, side), printed as they come and summed up at the end of a part."""

    def __init__(self) -> None:
        self.figures: dict[tuple[str, str], list[Figures]] = {}

    def add(self, part: str, side: str, figures: Figures) -> None:
        self.figures.setdefault((part, side), []).append(figures)
        shown = ", ".join(f"{k} {v:.3g}" for k, v in figures.items())
        print(f"  [{part}] {side}: {shown}", flush=True)

    def summary(self, part: str, sides: list[str]) -> None:
        print(f"\n== {part}: p50 over rounds (each round's figure) ==")
        names: list[str] = []
        for side in sides:
            for figures in self.figures.get((part, side), []):
                names += [n for n in figures if n not in names]
        for name in names:
            cells = []
            medians = []
            for side in sides:
                values = [f[name] for f in self.figures.get((part, side), []) if name in f]
                if not values:
                    cells.append(f"{side}: -")
                    continue
                medians.append(statistics.median(values))
                each = ", ".join(f"{v:.3g}" for v in values)
                cells.append(f"{side}: {medians[-1]:.4g} ({each})")
            ratios = [f"{medians[0] / m:.2f}" for m in medians[1:] if m]
            ratio = f"  [ratio {', '.join(ratios)}]" if len(ratios) == len(medians) - 1 else ""
            print(f"  {name:48} " + " | ".join(cells) + (ratio if ratios else ""))
        print(flush=True)


def orders(sides: list[Checkout], rounds: int) -> Iterator[tuple[int, Checkout]]:
    """Each round, every side, the order alternating."""
    for r in range(rounds):
        for side in sides if r % 2 == 0 else list(reversed(sides)):
            yield r, side


@contextmanager
def database(kind: str, folder: Path, server: str) -> Iterator[str]:
    if kind == "sqlite":
        name = folder / f"stack-{time.monotonic_ns()}.db"
        try:
            yield f"sqlite:///{name}"
        finally:
            for suffix in ("", "-wal", "-shm"):
                Path(f"{name}{suffix}").unlink(missing_ok=True)
        return
    with scratch_postgres(server, "bf_stack") as url:
        yield url


def databases(args: argparse.Namespace) -> list[str]:
    return ["sqlite"] + ([] if args.no_postgres else ["postgresql"])


def first_run_part(args: argparse.Namespace, sides: list[Checkout], folder: Path) -> None:
    report = Report()
    for kind in databases(args):
        part = f"first-run, {kind}"
        print(f"\n-- {part}: a new daemon, then 3 one-partition backfills (seconds) --")
        for r, side in orders(sides, args.first_runs):
            with database(kind, folder, args.postgres) as url:
                stack = Stack(side, url, folder)
                with running(stack):
                    settled = 0.0 if side.has("daemon", "--metrics-port") else stack.settle()
                    runs = asyncio.run(work.first_runs(stack, 3, key_base=10 * r))
                ready = {"daemon ready after (s)": stack.ready_after + settled}
                report.add(part, side.label, {**ready, **_prefixed("first backfill", runs[0])})
                for later in runs[1:]:
                    report.add(part, side.label, _prefixed("later backfill", later))
        report.summary(part, [s.label for s in sides])


def _prefixed(prefix: str, figures: Figures) -> Figures:
    return {f"{prefix}: {k}": v for k, v in figures.items()}


def in_process(size: int, kind: str, url: str) -> Figures:
    """The same backfill with the daemon in one process (``bench.daemon``), launched in it."""
    command = [sys.executable, "-m", "bench.daemon", "--only", "throughput"]
    command += ["--size", str(size), "--job", "daily", "--database", url]
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parent.parent)}
    done = subprocess.run(command, capture_output=True, text=True, env=env)
    found = re.search(r"([\d.]+) runs/s", done.stdout)
    if found is None:
        raise RuntimeError(f"bench.daemon on {kind}: {done.stdout[-500:]} {done.stderr[-1500:]}")
    first = re.search(r"first run succeeded after:\s+([\d.]+)", done.stdout)
    return {
        "runs/s to COMPLETED_SUCCESS (in process)": float(found.group(1)),
        "first run seen succeeded (s)": float(first.group(1)) if first else float("nan"),
    }


def dispatch_part(args: argparse.Namespace, sides: list[Checkout], folder: Path) -> None:
    report = Report()
    for kind in databases(args):
        part = f"dispatch, {args.size:,} runs, {kind}"
        print(f"\n-- {part} --")
        for _r, side in orders(sides, args.rounds):
            with database(kind, folder, args.postgres) as url:
                stack = Stack(side, url, folder)
                with running(stack):
                    stack.settle()
                    figures = asyncio.run(work.dispatch(stack, args.size))
            report.add(part, side.label, figures)
            if side.label == "this":
                with database(kind, folder, args.postgres) as url:
                    report.add(part, "in process", in_process(args.size, kind, url))
        report.summary(part, [s.label for s in sides] + ["in process"])


def api_only(
    part: str,
    args: argparse.Namespace,
    sides: list[Checkout],
    folder: Path,
    measure: Callable[[Stack], Figures | list[tuple[str, Figures]]],
) -> None:
    report = Report()
    for _, side in orders(sides, args.rounds):
        with database("sqlite", folder, args.postgres) as url:
            stack = Stack(side, url, folder, daemon=part == "assets")
            with running(stack):
                if part == "assets":
                    stack.settle()
                got = measure(stack)
        for name, figures in got if isinstance(got, list) else [(part, got)]:
            report.add(name, side.label, figures)
    for name in dict.fromkeys(name for name, _ in report.figures):
        report.summary(name, [s.label for s in sides])


def key_lists(stack: Stack, count: int) -> list[tuple[str, Figures]]:
    from datetime import UTC, datetime

    from bench.stack_defs import DYNAMIC_SET, JOBS, STATIC_KEYS

    out = []
    asyncio.run(work.add_dynamic_keys(stack, DYNAMIC_SET, STATIC_KEYS))
    for job in JOBS:
        name = job.name  # type: ignore[attr-defined]
        if name == "dynamic":
            keys = STATIC_KEYS[:KEY_COUNT]
        else:
            space = job.partitions.key_space(datetime.now(UTC))  # type: ignore[attr-defined]
            keys = space.keys(0, KEY_COUNT)
        figures = asyncio.run(work.key_list(stack, name, keys, count))
        out.append((f"keys, {name}", figures))
    return out


def celery_part(args: argparse.Namespace, sides: list[Checkout], folder: Path) -> None:
    report = Report()
    sides = [s for s in sides if s.has("worker")]
    for r, side in orders(sides, args.rounds):
        with database("postgresql", folder, args.postgres) as url:
            stack = Stack(side, url, folder, launcher="celery", broker=args.broker)
            with running(stack):
                runs = asyncio.run(work.first_runs(stack, 3, key_base=10 * r))
                stack.settle()
                figures = asyncio.run(work.dispatch(stack, args.celery_size))
        report.add("celery first-run", side.label, _prefixed("first backfill", runs[0]))
        for later in runs[1:]:
            report.add("celery first-run", side.label, _prefixed("later backfill", later))
        report.add("celery dispatch", side.label, figures)
    report.summary("celery first-run", [s.label for s in sides])
    report.summary("celery dispatch", [s.label for s in sides])


def celery_daemons_part(args: argparse.Namespace, sides: list[Checkout], folder: Path) -> None:
    """One daemon, then two sharing one backfill, with the same Celery workers (this checkout
    only): runs/s of each."""
    report = Report()
    side = sides[0]
    labels = {1: "1 daemon", 2: "2 daemons"}
    for r in range(args.rounds):
        for count in (1, 2) if r % 2 == 0 else (2, 1):
            with database("postgresql", folder, args.postgres) as url:
                stack = Stack(
                    side, url, folder, launcher="celery", broker=args.broker, daemons=count
                )
                with running(stack):
                    stack.settle()
                    figures = asyncio.run(work.dispatch(stack, args.celery_size))
            report.add("celery dispatch by daemons", labels[count], figures)
    report.summary("celery dispatch by daemons", list(labels.values()))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--against", action="append", default=[], help="also run this git revision (repeatable)"
    )
    parser.add_argument("--only", default=",".join(PARTS), help=f"some of {', '.join(PARTS)}")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--first-runs", type=int, default=5, help="daemons started per side")
    parser.add_argument("--size", type=int, default=10_000)
    parser.add_argument("--celery-size", type=int, default=5_000)
    parser.add_argument("--key-launches", type=int, default=10)
    parser.add_argument("--postgres", default="postgresql+psycopg://postgres@127.0.0.1:5432/test")
    parser.add_argument("--no-postgres", action="store_true")
    parser.add_argument("--broker", default="amqp://guest:guest@127.0.0.1:5672//")
    args = parser.parse_args()
    parts = [p.strip() for p in args.only.split(",") if p.strip()]
    print(f"bench.stack: {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.2f} at start")
    with tempfile.TemporaryDirectory(prefix="bench-stack-") as tmp, ExitStack() as stack:
        folder = Path(tmp)
        sides = [this_code(folder)]
        for revision in args.against:
            sides.append(stack.enter_context(checkout_of(revision, folder)))
        print("sides: " + ", ".join(f"{s.label} ({s.root})" for s in sides), flush=True)
        if "first-run" in parts:
            first_run_part(args, sides, folder)
        if "dispatch" in parts:
            dispatch_part(args, sides, folder)
        if "keys" in parts:
            api_only("keys", args, sides, folder, lambda s: key_lists(s, args.key_launches))
        if "launch" in parts:
            api_only(
                "launch", args, sides, folder, lambda s: asyncio.run(work.launches(s, 200, 4.0))
            )
        if "assets" in parts:
            api_only(
                "assets", args, sides, folder, lambda s: asyncio.run(work.asset_chain(s, 30)) or {}
            )
        if "celery" in parts:
            celery_part(args, sides, folder)
        if "celery-daemons" in parts:
            celery_daemons_part(args, sides, folder)
    print(f"load average {os.getloadavg()[0]:.2f} at the end")


if __name__ == "__main__":
    main()
