"""Benchmark of reading backfills: a page of 100 and one backfill with its counts.

A real ``backfiller serve`` on SQLite holding 300 backfills (launched through the API, with
titles and tags), read with the minimal keep-alive client of ``bench.launch``; then the same
queries in process (ASGI, no socket), as CPU time. Prints the p50 of each round and the
spread over the rounds. ``--profile`` prints a cProfile of the page of 100 in process. Run with
``python -m bench.listing`` (``BENCH_ROUNDS``, ``BENCH_COUNT`` queries per round). Not a test:
it asserts nothing.
"""

from __future__ import annotations

import asyncio
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from bench import _inproc
from bench.launch import MUTATION, Connection, start_server

LIST = """query List {
  backfills(first: 100) {
    edges { node {
      id status title createdAt target { job } counts { total succeeded failed percentDone }
    } }
  }
}"""
LIST_PLAIN = (
    """query ListPlain { backfills(first: 100) { edges { node { id status createdAt } } } }"""
)
ONE = """query One($id: ID!) {
  backfill(id: $id) { id status counts { total succeeded failed percentDone } }
}"""
BACKFILLS = 300


def launches() -> list[bytes]:
    out = []
    for i in range(BACKFILLS):
        launch = {
            "target": {"job": "single"},
            "partitions": {"keys": ["only"]},
            "title": f"backfill number {i}",
            "tags": [{"key": "team", "value": "bench"}],
        }
        out.append(json.dumps({"query": MUTATION, "variables": {"input": launch}}).encode())
    return out


def queries(backfill_id: str) -> dict[str, bytes]:
    return {
        "backfills(first: 100), plain fields": json.dumps({"query": LIST_PLAIN}).encode(),
        "backfills(first: 100), title, target, counts": json.dumps({"query": LIST}).encode(),
        "backfill(id) with counts": json.dumps(
            {"query": ONE, "variables": {"id": backfill_id}}
        ).encode(),
    }


def checked(result: dict[str, Any]) -> dict[str, Any]:
    if result.get("errors"):
        raise RuntimeError(result["errors"])
    data: dict[str, Any] = result["data"]
    return data


def spread(values: list[float]) -> str:
    return (
        f"p50 {statistics.median(values):6.2f} ms  (rounds {min(values):.2f} to {max(values):.2f})"
    )


async def measure(
    post: Any, rounds: int, count: int, clock: Any = time.perf_counter
) -> dict[str, list[float]]:
    last = ""
    for body in launches():
        data = checked(await post(body))
        last = data["launchBackfill"]["backfill"]["id"]
    bodies = queries(last)
    for body in bodies.values():  # warm up
        for _ in range(20):
            checked(await post(body))
    out: dict[str, list[float]] = {name: [] for name in bodies}
    for _ in range(rounds):
        samples: dict[str, list[float]] = {name: [] for name in bodies}
        for _ in range(count):
            for name, body in bodies.items():
                started = clock()
                result = await post(body)
                samples[name].append((clock() - started) * 1000)
                checked(result)
        for name in bodies:
            out[name].append(statistics.median(samples[name]))
    return out


async def over_http(rounds: int, count: int) -> dict[str, list[float]]:
    with tempfile.TemporaryDirectory() as tmp:
        server = start_server(Path(tmp) / "bench.db", cache=True)
        try:
            connection = await Connection.open(server.url)
            try:
                return await measure(
                    lambda body: connection.post("/graphql/v1", body), rounds, count
                )
            finally:
                await connection.close()
        finally:
            server.stop()


async def in_process(rounds: int, count: int, profile: bool) -> dict[str, list[float]]:
    async with _inproc.app_on_database() as app:
        # CPU time of this process, which is the server's: on a shared machine, wall time
        # also counts the moments other processes held the CPUs.
        out = await measure(lambda body: _inproc.post(app, body), rounds, count, time.process_time)
        if profile:
            print("\ncProfile of 50 pages of 100 backfills in process, by own time:")
            await _inproc.profile(app, json.dumps({"query": LIST}).encode(), 50, top=40)
    return out


def main() -> None:
    rounds = int(os.environ.get("BENCH_ROUNDS", "5"))
    count = int(os.environ.get("BENCH_COUNT", "50"))
    print(f"Reading backfills, SQLite, {BACKFILLS} stored; {os.cpu_count()} CPUs")
    print(f"{rounds} rounds of {count} queries of each kind; figures are p50 of each round")
    for name, values in asyncio.run(over_http(rounds, count)).items():
        print(f"[http]       {name:<45} {spread(values)}")
    local = asyncio.run(in_process(rounds, count, "--profile" in sys.argv))
    for name, values in local.items():
        print(f"[in process, CPU] {name:<40} {spread(values)}")


if __name__ == "__main__":
    main()
