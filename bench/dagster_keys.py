"""Key-list launches side by side with Dagster, in one run: the comparison of ``bench.keys``.

Starts Dagster's webserver (from another virtual environment, given by ``--dagster-bin``: its
``bin`` folder, with ``dagster`` and ``dagster-webserver`` installed; Dagster is not a
dependency of this project) on a SQLite instance in a temporary ``DAGSTER_HOME``, with a daily
job from 2000-01-01, and this project's server on SQLite with the same job. Then, round after
round, alternating between the two, launches backfills of an explicit list of 1,000 and 9,000
daily keys through each one's own GraphQL API (Dagster's ``launchPartitionBackfill``, this
project's ``launchBackfill``) with the same minimal keep-alive client, and prints each one's p50
per round. Dagster's daemon is not started: only the launch is timed, as for this project.

Run with ``python -m bench.dagster_keys --dagster-bin PATH`` (``BENCH_ROUNDS``, default 5;
``BENCH_COUNT`` launches of each size per round, default 10). Not a test: it asserts nothing.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx

from bench.keys import SIZES, body_of, check, keys_of, spread
from bench.launch import Connection, free_port, start_server

DAGSTER_DEFINITIONS = """
from dagster import DailyPartitionsDefinition, Definitions, job, op


@op
def noop():
    pass


@job(partitions_def=DailyPartitionsDefinition(start_date="2000-01-01"))
def daily_history():
    noop()


defs = Definitions(jobs=[daily_history])
"""

DAGSTER_LAUNCH = """
mutation Launch($params: LaunchBackfillParams!) {
  launchPartitionBackfill(backfillParams: $params) {
    __typename
    ... on LaunchBackfillSuccess { backfillId }
    ... on Error { message }
  }
}
"""


def dagster_body(size: int) -> bytes:
    params = {
        "selector": {
            "partitionSetName": "daily_history_partition_set",
            "repositorySelector": {
                "repositoryLocationName": "definitions.py",
                "repositoryName": "__repository__",
            },
        },
        "partitionNames": keys_of(size),
        "fromFailure": False,
    }
    return json.dumps({"query": DAGSTER_LAUNCH, "variables": {"params": params}}).encode()


def dagster_check(result: dict[str, Any]) -> None:
    answer = (result.get("data") or {}).get("launchPartitionBackfill") or {}
    if answer.get("__typename") != "LaunchBackfillSuccess":
        raise RuntimeError(f"Dagster's launch failed: {result}")


def start_dagster(bin_dir: Path, home: Path) -> tuple[subprocess.Popen[bytes], str]:
    (home / "definitions.py").write_text(DAGSTER_DEFINITIONS)
    port = free_port()
    env = {**os.environ, "DAGSTER_HOME": str(home), "PATH": f"{bin_dir}:{os.environ['PATH']}"}
    proc = subprocess.Popen(
        [str(bin_dir / "dagster-webserver"), "-f", "definitions.py", "-p", str(port)],
        cwd=home,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"dagster-webserver exited with {proc.returncode}")
        try:
            if httpx.get(f"{url}/server_info", timeout=2).status_code == 200:
                return proc, url
        except httpx.HTTPError:
            pass
        time.sleep(0.2)
    proc.kill()
    raise RuntimeError("dagster-webserver did not answer within 120 s")


async def timed(connection: Connection, path: str, body: bytes) -> tuple[float, dict[str, Any]]:
    started = time.perf_counter()
    result = await connection.post(path, body)
    return (time.perf_counter() - started) * 1000, result


async def compare(bin_dir: Path, rounds: int, count: int) -> None:
    ours = {size: body_of(size) for size in SIZES}
    theirs = {size: dagster_body(size) for size in SIZES}
    figures: dict[str, dict[int, list[float]]] = {
        name: {size: [] for size in SIZES} for name in ("backfiller", "dagster")
    }
    with tempfile.TemporaryDirectory() as tmp:
        home = Path(tmp) / "dagster"
        home.mkdir()
        dagster, dagster_url = start_dagster(bin_dir, home)
        server = start_server(Path(tmp) / "bench.db", cache=True)
        try:
            mine = await Connection.open(server.url)
            other = await Connection.open(dagster_url)
            for size in SIZES:  # warm up
                check((await timed(mine, "/graphql/v1", ours[size]))[1], size)
                dagster_check((await timed(other, "/graphql", theirs[size]))[1])
            for _ in range(rounds):
                samples: dict[str, dict[int, list[float]]] = {
                    name: {size: [] for size in SIZES} for name in figures
                }
                for _ in range(count):
                    for size in SIZES:
                        took, result = await timed(mine, "/graphql/v1", ours[size])
                        check(result, size)
                        samples["backfiller"][size].append(took)
                        took, result = await timed(other, "/graphql", theirs[size])
                        dagster_check(result)
                        samples["dagster"][size].append(took)
                for name in figures:
                    for size in SIZES:
                        figures[name][size].append(statistics.median(samples[name][size]))
            await mine.close()
            await other.close()
        finally:
            server.stop()
            dagster.terminate()
            dagster.wait(30)
    for size in SIZES:
        for name in figures:
            print(f"[{name:10}] {size:>5,} keys: {spread(figures[name][size])}")
        ratio = statistics.median(figures["dagster"][size]) / statistics.median(
            figures["backfiller"][size]
        )
        print(f"             {size:>5,} keys: Backfiller {ratio:.1f}x faster (p50 of p50s)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--dagster-bin", type=Path, required=True)
    args = parser.parse_args()
    rounds = int(os.environ.get("BENCH_ROUNDS", "5"))
    count = int(os.environ.get("BENCH_COUNT", "10"))
    version = subprocess.run(
        [str(args.dagster_bin / "dagster"), "--version"], capture_output=True, text=True
    ).stdout.strip()
    cpus = os.cpu_count()
    print(f"Key-list launches, Backfiller and {version} side by side, SQLite; {cpus} CPUs")
    print(f"{rounds} rounds of {count} launches of each size, alternating; p50 of each round, ms")
    asyncio.run(compare(args.dagster_bin, rounds, count))


if __name__ == "__main__":
    main()
