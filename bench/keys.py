"""Benchmark of `launchBackfill` with an explicit list of keys, for every partition kind.

For each job of ``bench/stack_defs.py`` (daily, hourly in UTC and in Europe/Berlin, weekly,
monthly, minute and cron windows, static and dynamic keys), its first 9,000 keys. Prints, over
several rounds:

- ``[in process]``: the CPU time of a 9,000-key launch and of a 1-key launch of the same job,
  called straight through ASGI (no socket; the server's own cost), and the CPU per key beyond
  the first: (9,000-key - 1-key) / 8,999. Target: at most 1 us.
- ``[resolve]``: the CPU per key of checking and locating the keys (``resolve_selection``)
  alone, beside the CPU per key of decoding the request's JSON.
- ``[http]`` (daily keys): the p50 latency over HTTP against a real ``backfiller serve``
  (``bench.stack`` does every kind over HTTP, against an older commit too).

``--profile KIND`` prints a cProfile of 20 launches of 9,000 keys of that job in process.
Run with ``python -m bench.keys`` (``BENCH_ROUNDS``, ``BENCH_COUNT`` launches of each size per
round, ``--kinds daily,hourly``). Not a test: it asserts nothing.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from backfiller.definitions.jobs import JobDefinition
from backfiller.domain import SelectionKind
from backfiller.planning import Selection, resolve_selection
from bench import _inproc, stack_defs
from bench.launch import MUTATION, Connection, start_server

SIZE = 9_000
JOBS: dict[str, JobDefinition] = {j.name: j for j in stack_defs.JOBS}  # type: ignore[misc]


def keys_of(kind: str, size: int = SIZE) -> list[str]:
    """The first ``size`` keys of the job ``kind`` (the dynamic job's: the static keys)."""
    if kind == "dynamic":
        return stack_defs.STATIC_KEYS[:size]
    return JOBS[kind].partitions.key_space(datetime.now(UTC)).keys(0, size)


def body_of(kind: str, keys: list[str]) -> bytes:
    launch = {"target": {"job": kind}, "partitions": {"keys": keys}}
    return json.dumps({"query": MUTATION, "variables": {"input": launch}}).encode()


def check(result: dict[str, Any], size: int) -> None:
    data = result["data"]["launchBackfill"]
    if data["backfill"] is None or data["backfill"]["counts"]["total"] != size:
        raise RuntimeError(f"launch failed: {data}")


def spread(values: list[float]) -> str:
    return f"p50 {statistics.median(values):7.3f}  (rounds {min(values):.3f} to {max(values):.3f})"


async def in_process(kinds: list[str], rounds: int, count: int, profile: str | None) -> None:
    async with _inproc.app_on_database(stack_defs.definitions) as app:
        add = {"name": stack_defs.DYNAMIC_SET, "keys": stack_defs.STATIC_KEYS}
        query = (
            "mutation($i: DynamicPartitionsInput!) "
            "{ addDynamicPartitions(input: $i) { keysChanged } }"
        )
        await _inproc.post(app, json.dumps({"query": query, "variables": {"i": add}}).encode())
        for kind in kinds:
            keys = keys_of(kind)
            bodies = {SIZE: body_of(kind, keys), 1: body_of(kind, keys[:1])}
            for size, payload in bodies.items():  # warm-up
                check(await _inproc.post(app, payload), size)
            per_key: list[float] = []
            medians: dict[int, list[float]] = {SIZE: [], 1: []}
            for _ in range(rounds):
                samples: dict[int, list[float]] = {SIZE: [], 1: []}
                for _ in range(count):
                    for size, payload in bodies.items():
                        started = time.process_time()  # this process is the server
                        result = await _inproc.post(app, payload)
                        samples[size].append((time.process_time() - started) * 1000)
                        check(result, size)
                for size in bodies:
                    medians[size].append(statistics.median(samples[size]))
                per_key.append((medians[SIZE][-1] - medians[1][-1]) / (SIZE - 1) * 1000)
            print(
                f"[in process] {kind:14} 9,000 keys {statistics.median(medians[SIZE]):6.2f} ms, "
                f"1 key {statistics.median(medians[1]):5.2f} ms; per key beyond the first: "
                f"{spread(per_key)} us"
            )
            if profile == kind:
                print(f"\ncProfile of 20 launches of 9,000 {kind} keys in process, by own time:")
                await _inproc.profile(app, bodies[SIZE], 20)


def resolve(kinds: list[str], rounds: int) -> None:
    """Microseconds of CPU per key: locating 9,000 keys; decoding them from the request's JSON."""
    now = datetime.now(UTC)
    for kind in kinds:
        partitions = JOBS[kind].partitions
        keys = keys_of(kind)
        dynamic = stack_defs.STATIC_KEYS if kind == "dynamic" else ()
        space = partitions.key_space(now, dynamic)
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
        print(
            f"[resolve] {kind:14} resolve_selection {spread(locate)} us a key; "
            f"json.loads {statistics.median(decode):.3f} us a key (for reference)"
        )


async def over_http(rounds: int, count: int) -> None:
    keys = keys_of("daily")
    bodies = {SIZE: body_of("daily", keys), 1: body_of("daily", keys[:1])}
    out: dict[int, list[float]] = {SIZE: [], 1: []}
    with tempfile.TemporaryDirectory() as tmp:
        server = start_server(Path(tmp) / "bench.db", True, 1, "bench.stack_defs:definitions")
        try:
            connection = await Connection.open(server.url)
            try:
                for size, payload in bodies.items():
                    check(await connection.post("/graphql/v1", payload), size)
                for _ in range(rounds):
                    samples: dict[int, list[float]] = {SIZE: [], 1: []}
                    for _ in range(count):
                        for size, payload in bodies.items():
                            started = time.perf_counter()
                            result = await connection.post("/graphql/v1", payload)
                            samples[size].append((time.perf_counter() - started) * 1000)
                            check(result, size)
                    for size in bodies:
                        out[size].append(statistics.median(samples[size]))
            finally:
                await connection.close()
        finally:
            server.stop()
    for size in bodies:
        print(f"[http]       daily, {size:>5,} keys: {spread(out[size])} ms")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--kinds", default=",".join(JOBS), help="jobs of bench/stack_defs.py")
    parser.add_argument("--profile", metavar="KIND", help="cProfile the launches of this job")
    parser.add_argument("--no-http", action="store_true")
    args = parser.parse_args()
    kinds = [k for k in args.kinds.split(",") if k]
    rounds = int(os.environ.get("BENCH_ROUNDS", "5"))
    count = int(os.environ.get("BENCH_COUNT", "10"))
    print(
        f"launchBackfill with a key list of {SIZE:,} keys, SQLite; {os.cpu_count()} CPUs, "
        f"load average {os.getloadavg()[0]:.2f}"
    )
    print(f"{rounds} rounds of {count} launches of each size; figures are p50 of each round")
    asyncio.run(in_process(kinds, rounds, count, args.profile))
    resolve(kinds, rounds)
    if not args.no_http:
        asyncio.run(over_http(rounds, count))
    print(f"load average {os.getloadavg()[0]:.2f} at the end")


if __name__ == "__main__":
    main()
