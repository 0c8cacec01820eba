"""Benchmark of a server's start, through ``backfiller serve``.

For each round and each checkout (this one and, with ``--against REV``, an older revision in a
worktree of its own, alternated in the same minutes): an SQLite database migrated beforehand,
then ``backfiller serve --auth none`` started from the checkout's command line (the command
checks its options and the database, then hands its process to the server). Prints the
seconds from the command to ``/healthz`` answering 200, and the CPU seconds the process used
until it fell quiet. Run with ``python -m bench.serve_start [--rounds 5] [--against REV]``.
Not a test: it asserts nothing.
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

from bench.daemon_start import checkouts, migrated, p50, quiet, running, tree_cpu
from bench.stack_procs import TARGET, Checkout, free_port


def one_round(c: Checkout, folder: Path) -> tuple[float, float]:
    """Seconds to the first answer, CPU to quiet."""
    database = migrated(c, folder)
    port = free_port()
    args = ["serve", "--definitions", TARGET, "--database", database, "--auth", "none"]
    ready_url = f"http://127.0.0.1:{port}/healthz"
    with running(c, folder, [*args, "--port", str(port)], ready_url) as (proc, ready):
        quiet(proc.pid)
        return ready, tree_cpu(proc.pid)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--against", help="an older revision, run in the same rounds")
    args = parser.parse_args()
    with (
        tempfile.TemporaryDirectory(prefix="bench-serve-start-") as tmp,
        checkouts(args.against, Path(tmp)) as sides,
    ):
        figures: dict[str, list[tuple[float, float]]] = {}
        for n in range(args.rounds):
            for c in sides:
                folder = Path(tmp) / f"{c.label}-{n}"
                folder.mkdir()
                figures.setdefault(c.label, []).append(one_round(c, folder))
        print("server start (SQLite), through `backfiller serve`:")
        for label, rows in figures.items():
            ready, cpu = (list(column) for column in zip(*rows, strict=True))
            print(f"  {label:>8}: answering after {p50(ready)} s; CPU to quiet {p50(cpu)} s")


if __name__ == "__main__":
    main()
