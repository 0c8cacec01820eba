"""Benchmark of `launchBackfill` over HTTP against a real server on SQLite.

Prints: latency p50/p99 for 1, 10,000 and 1,000,000 partitions; launches per second at
concurrency 1 and 8; the same with GraphQL parse/validation caches off. Run with
``make bench`` (or ``python -m bench.launch``). Not a test: it asserts nothing.
"""

from __future__ import annotations

import asyncio
import os
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import httpx

from backfiller import HourlyPartitions

REPO = Path(__file__).resolve().parent.parent
MUTATION = """mutation Launch($input: LaunchBackfillInput!) {
  launchBackfill(input: $input) { backfill { id counts { total } } userErrors { code } }
}"""

START = "1900-01-01-00:00"


def range_of(size: int) -> dict[str, object]:
    if size == 1:
        return {"target": {"job": "single"}, "partitions": {"keys": ["only"]}}
    space = HourlyPartitions(start=START).key_space(
        __import__("datetime").datetime.now(__import__("datetime").UTC)
    )
    return {
        "target": {"job": "hourly_history"},
        "partitions": {"range": {"start": space.key_at(0), "end": space.key_at(size - 1)}},
    }


@dataclass
class Server:
    url: str
    proc: subprocess.Popen[bytes]

    def stop(self) -> None:
        self.proc.terminate()
        self.proc.wait(10)


def start_server(database: Path, cache: bool) -> Server:
    port = 18000 + (os.getpid() % 1000)
    env = {**os.environ, "PYTHONPATH": str(REPO), "BACKFILLER_GRAPHQL_CACHE": "1" if cache else "0"}
    args = [
        sys.executable,
        "-m",
        "backfiller",
        "serve",
        "--definitions",
        "bench.defs:definitions",
        "--database",
        f"sqlite:///{database}",
        "--port",
        str(port),
    ]
    help_text = subprocess.run([*args[:4], "--help"], capture_output=True, text=True, env=env)
    if "--auth" in help_text.stdout:
        args += ["--auth", "none"]
    if "--rate-limit" in help_text.stdout:
        args += ["--rate-limit", "0"]
    proc = subprocess.Popen(args, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}"
    for _ in range(200):
        try:
            if httpx.get(f"{url}/healthz").status_code == 200:
                return Server(url, proc)
        except httpx.HTTPError:
            time.sleep(0.05)
    raise RuntimeError("server did not start")


async def latencies(url: str, size: int, count: int) -> list[float]:
    body = {"query": MUTATION, "variables": {"input": range_of(size)}}
    out: list[float] = []
    async with httpx.AsyncClient(base_url=url) as client:
        for _ in range(count):
            started = time.perf_counter()
            response = await client.post("/graphql/v1", json=body)
            out.append((time.perf_counter() - started) * 1000)
            data = response.json()["data"]["launchBackfill"]
            if data["backfill"] is None or data["backfill"]["counts"]["total"] != size:
                raise RuntimeError(f"launch failed: {data}")
    return out


async def throughput(url: str, concurrency: int, seconds: float) -> float:
    body = {"query": MUTATION, "variables": {"input": range_of(10_000)}}
    done = 0
    deadline = time.perf_counter() + seconds

    async def worker(client: httpx.AsyncClient) -> None:
        nonlocal done
        while time.perf_counter() < deadline:
            response = await client.post("/graphql/v1", json=body)
            response.raise_for_status()
            done += 1

    limits = httpx.Limits(max_connections=concurrency)
    async with httpx.AsyncClient(base_url=url, limits=limits) as client:
        started = time.perf_counter()
        await asyncio.gather(*(worker(client) for _ in range(concurrency)))
        return done / (time.perf_counter() - started)


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


async def run(cache: bool, count: int) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        server = start_server(Path(tmp) / "bench.db", cache)
        try:
            label = "cached" if cache else "uncached"
            await latencies(server.url, 1, 20)  # warm up
            for size in (1, 10_000, 1_000_000):
                values = await latencies(server.url, size, count)
                print(
                    f"[{label}] launch {size:>9,} partitions: "
                    f"p50 {statistics.median(values):6.2f} ms"
                    f"  p99 {pct(values, 0.99):6.2f} ms  (n={count})"
                )
            for concurrency in (1, 8):
                rate = await throughput(server.url, concurrency, 5.0)
                print(f"[{label}] launches/s at concurrency {concurrency}: {rate:7.1f}")
        finally:
            server.stop()


def main() -> None:
    count = int(os.environ.get("BENCH_COUNT", "300"))
    print(f"launchBackfill over HTTP, SQLite, one server process; {os.cpu_count()} CPUs")
    asyncio.run(run(True, count))
    asyncio.run(run(False, count))


if __name__ == "__main__":
    main()
