"""Benchmark of the test suite's live processes: forked from the launchpad, or new interpreters.

The suite starts about 370 servers and daemons per run (``tests.support.LiveProcess``). For
each round, on one migrated SQLite database, it starts ``backfiller daemon --workers 2`` (until
it says it started, then 0.5 s for its workers) and ``backfiller serve`` (until /healthz
answers), both ways alternated: from the launchpad (``tests/launchpad.py``, the suite's way)
and as ``python -m backfiller`` in a new interpreter (``BACKFILLER_TEST_FRESH_PROCESSES=1``).
Prints the median CPU seconds of the process and everything under it at that moment, and the
seconds until it was ready. Run with ``python -m bench.live_starts [--rounds 5]``.
Not a test: it asserts nothing.
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from collections.abc import Callable

from backfiller.storage.migrations import upgrade_database
from bench.daemon_start import tree_cpu
from tests.support import LiveProcess, LiveServer

DEFINITIONS = "tests.defs.jobs_daemon:definitions"
FRESH = "BACKFILLER_TEST_FRESH_PROCESSES"


def _daemon(url: str) -> tuple[float, float]:
    began = time.monotonic()
    daemon = LiveProcess(
        ["daemon", "--database", url, "--definitions", DEFINITIONS, "--workers", "2"]
    )
    try:
        daemon.output_once_it_says("started", timeout=30)
        ready = time.monotonic() - began
        time.sleep(0.5)  # its workers start
        return tree_cpu(daemon.proc.pid), ready
    finally:
        daemon.stop()


def _server(url: str) -> tuple[float, float]:
    began = time.monotonic()
    server = LiveServer(url, DEFINITIONS)
    try:
        return tree_cpu(server.proc.pid), time.monotonic() - began
    finally:
        server.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rounds", type=int, default=5)
    rounds = parser.parse_args().rounds
    url = f"sqlite:///{tempfile.mkdtemp()}/starts.db"
    upgrade_database(url)
    starts: dict[str, Callable[[str], tuple[float, float]]] = {
        "daemon --workers 2": _daemon,
        "serve": _server,
    }
    figures: dict[tuple[str, str], list[tuple[float, float]]] = {}
    _server(url)  # the launchpad itself starts once per test process: not counted
    for _ in range(rounds):
        for way in ("launchpad", "new interpreter"):
            if way == "launchpad":
                os.environ.pop(FRESH, None)
            else:
                os.environ[FRESH] = "1"
            for name, start in starts.items():
                figures.setdefault((name, way), []).append(start(url))
    print(f"{'process':20} {'started':16} {'CPU s (p50)':>12} {'ready s (p50)':>14}")
    for (name, way), seen in figures.items():
        cpu = statistics.median(c for c, _ in seen)
        ready = statistics.median(r for _, r in seen)
        print(f"{name:20} {way:16} {cpu:12.2f} {ready:14.2f}")


if __name__ == "__main__":
    main()
