"""Benchmark of start-up and idle memory.

Prints, over several rounds: the seconds from the ``backfiller dev`` command to its first
answered request (a fresh directory each round, so the database is created and migrated;
then again on the existing database), and the resident memory (VmRSS) of an idle
``backfiller serve`` process (one server process, on an existing SQLite database) after it
answered a launch and a page of backfills. Run with ``python -m bench.startup``
(``BENCH_ROUNDS``). Not a test: it
asserts nothing.
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx

from bench.launch import MUTATION, REPO, free_port

LIST = '{"query": "{ backfills(first: 100) { edges { node { id status } } } }"}'


def spread(values: list[float], unit: str) -> str:
    return (
        f"p50 {statistics.median(values):6.2f} {unit}  "
        f"(rounds {min(values):.2f} to {max(values):.2f})"
    )


def env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(REPO)}


def first_answer(args: list[str], cwd: Path) -> tuple[float, subprocess.Popen[bytes], int]:
    """Seconds from spawning ``args`` to the first 200 of ``/healthz``; the process; its port."""
    port = free_port()
    started = time.perf_counter()
    proc = subprocess.Popen(
        [*args, "--port", str(port)],
        cwd=cwd,
        env=env(),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    url = f"http://127.0.0.1:{port}/healthz"
    with httpx.Client() as client:
        while True:
            try:
                if client.get(url).status_code == 200:
                    return time.perf_counter() - started, proc, port
            except httpx.HTTPError:
                pass
            if proc.poll() is not None:
                raise RuntimeError(f"{args} exited with {proc.returncode}")
            time.sleep(0.01)


def stop(proc: subprocess.Popen[bytes]) -> None:
    proc.terminate()
    try:
        proc.wait(15)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def dev_start(rounds: int) -> tuple[list[float], list[float]]:
    fresh: list[float] = []
    existing: list[float] = []
    command = [sys.executable, "-m", "backfiller", "dev", "--workers", "1"]
    for _ in range(rounds):
        with tempfile.TemporaryDirectory() as tmp:
            for out in (fresh, existing):
                seconds, proc, _ = first_answer(command, Path(tmp))
                stop(proc)
                out.append(seconds)
    return fresh, existing


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError("no VmRSS")


def idle_rss(rounds: int) -> list[float]:
    out: list[float] = []
    for _ in range(rounds):
        with tempfile.TemporaryDirectory() as tmp:
            database = f"sqlite:///{Path(tmp) / 'bench.db'}"
            # An existing database, as at every start but the first.
            upgrade = [sys.executable, "-m", "backfiller", "db", "upgrade", "--database", database]
            subprocess.run(upgrade, check=True, capture_output=True, env=env())
            command = [sys.executable, "-m", "backfiller", "serve"]
            command += ["--definitions", "bench.defs:definitions", "--database", database]
            command += ["--auth", "none", "--insecure-no-auth", "--rate-limit", "0"]
            _, proc, port = first_answer(command, Path(tmp))
            try:
                url = f"http://127.0.0.1:{port}/graphql/v1"
                launch = {"target": {"job": "single"}, "partitions": {"keys": ["only"]}}
                body = {"query": MUTATION, "variables": {"input": launch}}
                with httpx.Client() as client:
                    client.post(url, json=body).raise_for_status()
                    client.post(url, content=LIST, headers={"content-type": "application/json"})
                time.sleep(1.0)  # idle
                out.append(rss_mb(proc.pid))
            finally:
                stop(proc)
    return out


def main() -> None:
    rounds = int(os.environ.get("BENCH_ROUNDS", "5"))
    print(f"Start-up and idle memory; {os.cpu_count()} CPUs, {rounds} rounds")
    fresh, existing = dev_start(rounds)
    print(f"[start-up] backfiller dev, first answer, new database:      {spread(fresh, 's')}")
    print(f"[start-up] backfiller dev, first answer, existing database: {spread(existing, 's')}")
    print(f"[memory]   idle backfiller serve, VmRSS: {spread(idle_rss(rounds), 'MB')}")


if __name__ == "__main__":
    main()
