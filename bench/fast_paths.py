"""The speed paths (``Settings.fast_paths``) measured through the real server: on and off.

Real server processes on one SQLite database, side by side in the same minutes: every speed
path on (the code as it ships) and every one off (``BACKFILLER_FAST_PATHS=0``). Each round
sends every server the same requests in turn (the order rotated each round) over keep-alive
connections with a minimal HTTP/1.1 client, and reads the server's CPU time from ``/proc``:
requests per second, and the server's CPU microseconds per request, for a small query
(``{ apiVersion }``, the HTTP and GraphQL path alone) and a 1-partition launch, at
concurrency 1 and 8. Ratios are against "all on" of the same round; the medians of the rounds
are printed.

Run with ``python -m bench.fast_paths`` (``BENCH_ROUNDS``, ``BENCH_COUNT``). Not a test: it
asserts nothing. At commit 0b42791 this benchmark also ran a server with the GraphQL lane
alone off and one with joined socket writes alone off (its ``serve`` entry turned the one path
off): neither showed a gain, and both are gone (docs/benchmarks.md).
"""

from __future__ import annotations

import asyncio
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import httpx

from bench.launch import REPO, Connection, free_port, launch_body
from bench.proc_cpu import process_cpu

QUERY = json.dumps({"query": "{ apiVersion }"}).encode()
VARIANTS = ("all on", "all off")
WORKLOADS = (("query", QUERY), ("launch 1", launch_body(1)))


@dataclass
class Server:
    name: str
    url: str
    proc: subprocess.Popen[bytes]

    def stop(self) -> None:
        self.proc.terminate()
        self.proc.wait(10)


def start(name: str, url: str) -> Server:
    from backfiller.config import AuthMode, Settings
    from backfiller.web.workers import SETTINGS_VARIABLE, settings_to_environment

    port = free_port()
    settings = Settings(
        database_url=url,
        definitions="bench.defs:definitions",
        port=port,
        auth_mode=AuthMode.NONE,
        launch_rate_limit=0,
        fast_paths=name != "all off",
    )
    env = {
        **os.environ,
        "PYTHONPATH": str(REPO),
        SETTINGS_VARIABLE: settings_to_environment(settings),
        "BACKFILLER_FAST_PATHS": "0" if name == "all off" else "1",
    }
    args = [sys.executable, "-m", "backfiller.web.serving"]
    proc = subprocess.Popen(args, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    base = f"http://127.0.0.1:{port}"
    for _ in range(400):
        try:
            if httpx.get(f"{base}/healthz").status_code == 200:
                return Server(name, base, proc)
        except httpx.HTTPError:
            time.sleep(0.05)
    raise RuntimeError(f"server {name} did not start")


async def measure(server: Server, body: bytes, concurrency: int, count: int) -> tuple[float, float]:
    """Requests per second, and the server's CPU microseconds per request."""
    connections = [await Connection.open(server.url) for _ in range(concurrency)]
    each = count // concurrency

    async def send(connection: Connection) -> None:
        for _ in range(each):
            await connection.post("/graphql/v1", body)

    try:
        cpu = process_cpu(server.proc.pid)
        began = time.perf_counter()
        await asyncio.gather(*(send(c) for c in connections))
        elapsed = time.perf_counter() - began
        spent = process_cpu(server.proc.pid) - cpu
    finally:
        for connection in connections:
            await connection.close()
    done = each * concurrency
    return done / elapsed, spent / done * 1e6


async def main(rounds: int, count: int) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        url = f"sqlite:///{Path(tmp) / 'bench.db'}"
        upgrade = [sys.executable, "-m", "backfiller", "db", "upgrade", "--database", url]
        env = {**os.environ, "PYTHONPATH": str(REPO)}
        await asyncio.to_thread(subprocess.run, upgrade, check=True, capture_output=True, env=env)
        servers = [start(name, url) for name in VARIANTS]
        try:
            for server in servers:  # warm up
                await measure(server, QUERY, 1, 200)
                await measure(server, launch_body(1), 1, 100)
            found: dict[tuple[str, str, int], list[tuple[float, float]]] = {}
            for r in range(rounds):
                order = servers[r % len(servers) :] + servers[: r % len(servers)]
                for label, body in WORKLOADS:
                    for concurrency in (1, 8):
                        n = count if label == "query" else count // 2
                        for server in order:
                            key = (label, server.name, concurrency)
                            found.setdefault(key, []).append(
                                await measure(server, body, concurrency, n)
                            )
            report(found, rounds)
        finally:
            for server in servers:
                server.stop()


def report(found: dict[tuple[str, str, int], list[tuple[float, float]]], rounds: int) -> None:
    print(f"load average at the end: {os.getloadavg()[0]:.2f} ({rounds} rounds)")
    for label, _ in WORKLOADS:
        for concurrency in (1, 8):
            base = found[(label, "all on", concurrency)]
            for name in VARIANTS:
                runs = found[(label, name, concurrency)]
                rate = statistics.median(r for r, _ in runs)
                cpu = statistics.median(c for _, c in runs)
                rate_ratio = statistics.median(
                    r / b for (r, _), (b, _) in zip(runs, base, strict=True)
                )
                cpu_ratio = statistics.median(
                    c / b for (_, c), (_, b) in zip(runs, base, strict=True)
                )
                print(
                    f"{label:>8} c={concurrency} {name:>7}: {rate:7.0f} req/s "
                    f"({rate_ratio:5.3f}x), server CPU {cpu:6.0f} us/req ({cpu_ratio:5.3f}x)"
                )


if __name__ == "__main__":
    rounds, count = os.environ.get("BENCH_ROUNDS", "5"), os.environ.get("BENCH_COUNT", "2000")
    asyncio.run(main(int(rounds), int(count)))
