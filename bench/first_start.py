"""Benchmark of how soon a launched backfill's first run starts, with a daemon already running.

Set-ups, each with its processes started and idle before the clock starts: ``backfiller dev``
(the API and the daemon in one process) on SQLite, and ``backfiller serve`` beside
``backfiller daemon`` (two processes sharing the database, as deployed) on SQLite and, with
``--postgres URL`` (a server where a scratch database may be created), on PostgreSQL.

Each launches a one-partition backfill of a no-op job over HTTP, ``BENCH_COUNT`` times one
after the other (each waits for the previous one to finish), and takes the run's
``startedAt`` (as the server recorded it) minus the wall clock just before the launch request
was sent. A random pause of up to 0.5 s before each launch spreads the launches over the
daemon's planning interval (0.25 s), which its launch watch (``storage.launch_watch``) cuts
short. Prints the p50, p90 and maximum. Run with
``python -m bench.first_start [--postgres URL]``. Not a test: it asserts nothing.
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime

import httpx

from backfiller import HourlyPartitions
from bench.databases import scratch_postgres
from bench.launch import REPO, free_port

LAUNCH = """mutation($input: LaunchBackfillInput!) {
  launchBackfill(input: $input) { backfill { id } userErrors { code message } }
}"""
RUNS = """query($id: ID!) {
  backfill(id: $id) { status runs(first: 1) { nodes { startedAt } } }
}"""
SPACE = HourlyPartitions(start="1900-01-01-00:00").key_space(datetime.now(UTC))


def command(*args: str) -> list[str]:
    return [sys.executable, "-m", "backfiller", *args, "--definitions", "bench.defs:definitions"]


def wait_healthy(url: str) -> None:
    for _ in range(400):
        try:
            if httpx.get(f"{url}/healthz").status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.05)
    raise RuntimeError(f"{url} did not answer")


def started_after_launch(client: httpx.Client, url: str, index: int) -> float:
    """Seconds from just before the launch request to its run's recorded start."""
    key = SPACE.key_at(index)
    variables = {
        "input": {
            "target": {"job": "hourly_history"},
            "partitions": {"range": {"start": key, "end": key}},
        }
    }
    sent = time.time()
    answer = client.post(f"{url}/graphql/v1", json={"query": LAUNCH, "variables": variables})
    payload = answer.json()["data"]["launchBackfill"]
    assert payload["userErrors"] == [], payload
    backfill_id = payload["backfill"]["id"]
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        data = client.post(
            f"{url}/graphql/v1", json={"query": RUNS, "variables": {"id": backfill_id}}
        ).json()["data"]["backfill"]
        if data["status"] == "COMPLETED_SUCCESS":
            started = datetime.fromisoformat(data["runs"]["nodes"][0]["startedAt"])
            return started.timestamp() - sent
        time.sleep(0.02)
    raise RuntimeError(f"{backfill_id} did not finish within 30 s")


def measure(name: str, processes: list[list[str]], url: str, count: int) -> None:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    started = [
        subprocess.Popen(p, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        for p in processes
    ]
    try:
        wait_healthy(url)
        time.sleep(3)  # the daemon's workers are up, and it idles
        with httpx.Client(timeout=30) as client:
            started_after_launch(client, url, 0)  # warm up
            figures = []
            for i in range(1, count + 1):
                # A random pause first, so that the launches fall at every phase of the
                # daemon's planning interval instead of locking onto one.
                time.sleep(random.uniform(0, 0.5))
                figures.append(started_after_launch(client, url, i) * 1000)
    finally:
        for proc in started:
            proc.terminate()
        for proc in started:
            proc.wait(30)
    figures.sort()
    p90 = figures[int(len(figures) * 0.9) - 1]
    print(
        f"[{name:<26}] first run started after the launch: p50 {statistics.median(figures):6.0f}"
        f" ms  p90 {p90:6.0f} ms  max {figures[-1]:6.0f} ms  (n={len(figures)})"
    )


def serve_and_daemon(name: str, database: str, count: int) -> None:
    subprocess.run(
        [sys.executable, "-m", "backfiller", "db", "upgrade", "--database", database],
        check=True,
        env={**os.environ, "PYTHONPATH": str(REPO)},
        capture_output=True,
    )
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    serve = command("serve", "--database", database, "--port", str(port), "--auth", "none")
    daemon = command("daemon", "--database", database, "--workers", "2")
    measure(name, [[*serve, "--rate-limit", "0"], daemon], url, count)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--postgres", metavar="URL", help="also serve + daemon on PostgreSQL")
    args = parser.parse_args()
    count = int(os.environ.get("BENCH_COUNT", "30"))
    print(f"First run's start after a launch, daemon running; {os.cpu_count()} CPUs")
    with tempfile.TemporaryDirectory(prefix="bench-first-") as tmp:
        port = free_port()
        url = f"http://127.0.0.1:{port}"
        dev = command("dev", "--database", f"sqlite:///{tmp}/dev.db", "--port", str(port))
        measure("dev, SQLite", [dev], url, count)
        serve_and_daemon("serve + daemon, SQLite", f"sqlite:///{tmp}/split.db", count)
    if args.postgres:
        with scratch_postgres(args.postgres, "bench_first") as database:
            serve_and_daemon("serve + daemon, PostgreSQL", database, count)


if __name__ == "__main__":
    main()
