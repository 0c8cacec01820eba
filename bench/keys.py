"""Benchmark of `launchBackfill` with an explicit list of keys (1,000 and 9,000 daily keys).

Prints, over several rounds: the p50 latency over HTTP against a real server on SQLite (the
minimal keep-alive client of ``bench.launch``), the p50 CPU time of the same launch in
process (ASGI, no socket), and the CPU per key of checking and locating the keys
(``resolve_selection``) beside the CPU per key of decoding the request's JSON.
``--profile`` prints a cProfile of the 9,000-key launch in process. Run with
``python -m bench.keys`` (``BENCH_ROUNDS``, ``BENCH_COUNT`` launches of each size per round).
Not a test: it asserts nothing.
"""

from __future__ import annotations

import asyncio
import json
import os
import statistics
import sys
import tempfile
import time
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import Any

from backfiller import DailyPartitions
from backfiller.domain import SelectionKind
from backfiller.planning import Selection, resolve_selection
from bench import _inproc
from bench.launch import MUTATION, Connection, start_server

SIZES = (1_000, 9_000)


def keys_of(size: int) -> list[str]:
    """``size`` daily keys from 2000-01-01, the job of the comparison with Dagster."""
    first = date(2000, 1, 1)
    return [(first + timedelta(days=i)).isoformat() for i in range(size)]


def body_of(size: int) -> bytes:
    launch = {"target": {"job": "daily_history"}, "partitions": {"keys": keys_of(size)}}
    return json.dumps({"query": MUTATION, "variables": {"input": launch}}).encode()


def check(result: dict[str, Any], size: int) -> None:
    data = result["data"]["launchBackfill"]
    if data["backfill"] is None or data["backfill"]["counts"]["total"] != size:
        raise RuntimeError(f"launch failed: {data}")


def spread(values: list[float]) -> str:
    return f"p50 {statistics.median(values):7.2f}  (rounds {min(values):.2f} to {max(values):.2f})"


async def over_http(rounds: int, count: int) -> dict[int, list[float]]:
    bodies = {size: body_of(size) for size in SIZES}
    out: dict[int, list[float]] = {size: [] for size in SIZES}
    with tempfile.TemporaryDirectory() as tmp:
        server = start_server(Path(tmp) / "bench.db", cache=True)
        try:
            connection = await Connection.open(server.url)
            try:
                for size in SIZES:  # warm up
                    check(await connection.post("/graphql/v1", bodies[size]), size)
                for _ in range(rounds):
                    samples: dict[int, list[float]] = {size: [] for size in SIZES}
                    for _ in range(count):
                        for size in SIZES:
                            started = time.perf_counter()
                            result = await connection.post("/graphql/v1", bodies[size])
                            samples[size].append((time.perf_counter() - started) * 1000)
                            check(result, size)
                    for size in SIZES:
                        out[size].append(statistics.median(samples[size]))
            finally:
                await connection.close()
        finally:
            server.stop()
    return out


async def in_process(rounds: int, count: int, profile: bool) -> dict[int, list[float]]:
    bodies = {size: body_of(size) for size in SIZES}
    out: dict[int, list[float]] = {size: [] for size in SIZES}
    async with _inproc.app_on_database() as app:
        for size in SIZES:
            check(await _inproc.post(app, bodies[size]), size)
        for _ in range(rounds):
            samples: dict[int, list[float]] = {size: [] for size in SIZES}
            for _ in range(count):
                for size in SIZES:
                    # CPU time of this process, which is the server's (see bench.listing).
                    started = time.process_time()
                    result = await _inproc.post(app, bodies[size])
                    samples[size].append((time.process_time() - started) * 1000)
                    check(result, size)
            for size in SIZES:
                out[size].append(statistics.median(samples[size]))
        if profile:
            print("\ncProfile of 20 launches of 9,000 keys in process, by own time:")
            await _inproc.profile(app, bodies[9_000], 20)
    return out


def per_key(rounds: int) -> tuple[list[float], list[float]]:
    """Microseconds of CPU per key: locating 9,000 keys; decoding them from the request's JSON."""
    partitions = DailyPartitions(start="2000-01-01")
    space = partitions.key_space(datetime.now(UTC))
    keys = keys_of(9_000)
    selection = Selection(SelectionKind.KEYS, keys=tuple(keys))
    text = json.dumps({"variables": {"input": {"partitions": {"keys": keys}}}})
    locate: list[float] = []
    decode: list[float] = []
    for _ in range(rounds):
        started = time.process_time()
        for _ in range(10):
            resolve_selection(selection, partitions, space)
        locate.append((time.process_time() - started) / 10 / len(keys) * 1e6)
        started = time.process_time()
        for _ in range(10):
            json.loads(text)
        decode.append((time.process_time() - started) / 10 / len(keys) * 1e6)
    return locate, decode


def main() -> None:
    rounds = int(os.environ.get("BENCH_ROUNDS", "5"))
    count = int(os.environ.get("BENCH_COUNT", "20"))
    print(
        f"launchBackfill with a key list (daily job from 2000-01-01), SQLite; {os.cpu_count()} CPUs"
    )
    print(f"{rounds} rounds of {count} launches of each size; figures are p50 of each round, ms")
    http = asyncio.run(over_http(rounds, count))
    for size in SIZES:
        print(f"[http]       {size:>5,} keys: {spread(http[size])}")
    local = asyncio.run(in_process(rounds, count, "--profile" in sys.argv))
    for size in SIZES:
        print(f"[in process, CPU] {size:>5,} keys: {spread(local[size])}")
    locate, decode = per_key(rounds)
    print(f"[per key]    resolve_selection: {spread(locate)} us")
    print(f"[per key]    json.loads of the request: {spread(decode)} us (for reference)")


if __name__ == "__main__":
    main()
