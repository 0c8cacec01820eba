"""Benchmark of a daemon's start and of a worker's replacement, through ``backfiller daemon``.

For each round and each checkout (this one and, with ``--against REV``, an older revision in a
worktree of its own, alternated in the same minutes): a fresh SQLite database, then
``backfiller daemon --workers N --metrics-port P`` started from the checkout's command line.
Prints the seconds from the command to its ``/readyz`` answering 200 (every worker started and
connected), the CPU seconds the daemon and all its processes used until they fell quiet, and,
after one worker is SIGKILLed, the CPU seconds its replacement cost (the daemon's, the
server's and the new worker's, until the pool has N workers again and is quiet).
Run with ``python -m bench.daemon_start [--workers 2,8] [--rounds 3] [--against REV]``.
Not a test: it asserts nothing.
"""

from __future__ import annotations

import argparse
import contextlib
import signal
import statistics
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import httpx

from bench.proc_cpu import by_parent, children_cpu, stat_cpu, stat_fields
from bench.stack_procs import TARGET, Checkout, checkout_of, free_port, this_checkout

QUIET_SECONDS = 0.5


def _cmdline(pid: int) -> bytes:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return b""


def _descendants(pid: int) -> dict[int, int]:
    """Live descendants of ``pid``: each one's parent."""
    children = by_parent()
    found: dict[int, int] = {}
    todo = [pid]
    while todo:
        parent = todo.pop()
        for child, _ in children.get(parent, []):
            found[child] = parent
            todo.append(child)
    return found


def workers(daemon: int) -> list[int]:
    """The daemon's worker processes: spawned ones (``spawn_main``) or the children of its
    fork server."""
    found = _descendants(daemon)
    return [
        pid
        for pid, parent in found.items()
        if b"spawn_main" in _cmdline(pid)
        or (parent != daemon and b"forkserver" in _cmdline(parent))
    ]


def tree_cpu(pid: int) -> float:
    """CPU seconds of the daemon and its processes, live or reaped (a killed worker's too)."""
    return stat_cpu(stat_fields(Path(f"/proc/{pid}/stat")), children=True) + children_cpu(pid)


def quiet(pid: int, limit: float = 60.0) -> None:
    """Until the daemon's tree used no CPU for ``QUIET_SECONDS``."""
    began = time.monotonic()
    last, since = tree_cpu(pid), time.monotonic()
    while time.monotonic() - began < limit:
        time.sleep(0.1)
        now = tree_cpu(pid)
        if now - last > 0.011:
            last, since = now, time.monotonic()
        elif time.monotonic() - since >= QUIET_SECONDS:
            return


def answers_200(url: str) -> bool:
    try:
        return httpx.get(url, timeout=2.0).status_code == 200
    except httpx.HTTPError:
        return False


def migrated(c: Checkout, folder: Path) -> str:
    """A fresh SQLite database in ``folder``, migrated by the checkout's own command line."""
    database = f"sqlite:///{folder / 'bench.db'}"
    subprocess.run(
        c.command("db", "upgrade", "--database", database),
        check=True,
        env=c.env(),
        cwd=c.root,
        capture_output=True,
    )
    return database


@contextlib.contextmanager
def running(
    c: Checkout, folder: Path, args: list[str], ready_url: str
) -> Iterator[tuple[subprocess.Popen[bytes], float]]:
    """The checkout's command line with ``args``, once ``ready_url`` answers 200, with the
    seconds that took; stopped with SIGTERM (SIGKILL after 30 s) at the end."""
    began = time.perf_counter()
    log_path = folder / f"{args[0]}.log"
    log = log_path.open("wb")
    proc = subprocess.Popen(
        c.command(*args), env=c.env(), cwd=c.root, stdout=log, stderr=subprocess.STDOUT
    )
    try:
        while not answers_200(ready_url):
            if proc.poll() is not None or time.perf_counter() - began > 120:
                raise RuntimeError(log_path.read_text(errors="replace")[-800:])
            time.sleep(0.01)
        yield proc, time.perf_counter() - began
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(5)


def one_round(c: Checkout, count: int, folder: Path) -> tuple[float, float, float]:
    """Seconds to ready, CPU to quiet, CPU of one worker's replacement."""
    database = migrated(c, folder)
    port = free_port()
    args = ["daemon", "--definitions", TARGET, "--database", database, "--workers", str(count)]
    ready_url = f"http://127.0.0.1:{port}/readyz"
    with running(c, folder, [*args, "--metrics-port", str(port)], ready_url) as (proc, ready):
        quiet(proc.pid)
        started = tree_cpu(proc.pid)
        pool = workers(proc.pid)
        before = tree_cpu(proc.pid)
        victim = pool[0]
        subprocess.run(["kill", "-KILL", str(victim)], check=True)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            now = workers(proc.pid)
            if len(now) == count and victim not in now:
                break
            time.sleep(0.02)
        quiet(proc.pid)
        replaced = tree_cpu(proc.pid) - before
        return ready, started, replaced


def p50(values: list[float]) -> str:
    return f"p50 {statistics.median(values):5.2f} ({min(values):.2f} to {max(values):.2f})"


@contextlib.contextmanager
def checkouts(against: str | None, folder: Path) -> Iterator[list[Checkout]]:
    here = this_checkout(folder)
    if against is None:
        yield [here]
        return
    with checkout_of(against, folder) as old:
        yield [here, old]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--workers", default="2,8", help="pool sizes, comma-separated")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--against", help="an older revision, run in the same rounds")
    args = parser.parse_args()
    sizes = [int(n) for n in args.workers.split(",")]
    with (
        tempfile.TemporaryDirectory(prefix="bench-daemon-start-") as tmp,
        checkouts(args.against, Path(tmp)) as sides,
    ):
        figures: dict[tuple[str, int], list[tuple[float, float, float]]] = {}
        for n in range(args.rounds):
            for size in sizes:
                for c in sides:
                    folder = Path(tmp) / f"{c.label}-{size}-{n}"
                    folder.mkdir()
                    figures.setdefault((c.label, size), []).append(one_round(c, size, folder))
        print("daemon start (SQLite, local launcher), through `backfiller daemon`:")
        for (label, size), rows in figures.items():
            ready, cpu, replaced = (list(column) for column in zip(*rows, strict=True))
            print(
                f"  {label:>8} {size} workers: ready after {p50(ready)} s;"
                f" CPU to quiet {p50(cpu)} s; one worker replaced {p50(replaced)} s of CPU"
            )


if __name__ == "__main__":
    main()
