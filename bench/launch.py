"""Benchmark of `launchBackfill` over HTTP against a real server on SQLite.

Prints: latency p50/p99 for 1, 10,000 and 1,000,000 partitions; launches per second at
concurrency 1 and 8; the same with GraphQL parse/validation caches off; launches per second
with one server process per CPU (``serve --workers``). The client is a minimal keep-alive
HTTP/1.1 client (one httpx figure is printed for reference). Run with ``make bench`` (or
``python -m bench.launch``; ``BENCH_COUNT``, ``BENCH_WORKERS``). Not a test: it asserts
nothing.
"""

from __future__ import annotations

import asyncio
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

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
    space = HourlyPartitions(start=START).key_space(datetime.now(UTC))
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


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


def database_url(database: Path) -> str:
    """``BENCH_DATABASE_URL`` (say a PostgreSQL database, upgraded here), else SQLite at
    ``database``."""
    url = os.environ.get("BENCH_DATABASE_URL")
    if not url:
        return f"sqlite:///{database}"
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    upgrade = [sys.executable, "-m", "backfiller", "db", "upgrade", "--database", url]
    subprocess.run(upgrade, check=True, capture_output=True, env=env)
    return url


def start_server(
    database: Path, cache: bool, workers: int = 1, definitions: str = "bench.defs:definitions"
) -> Server:
    port = free_port()
    env = {**os.environ, "PYTHONPATH": str(REPO), "BACKFILLER_GRAPHQL_CACHE": "1" if cache else "0"}
    args = [
        sys.executable,
        "-m",
        "backfiller",
        "serve",
        "--definitions",
        definitions,
        "--database",
        database_url(database),
        "--port",
        str(port),
    ]
    help_text = subprocess.run([*args[:4], "--help"], capture_output=True, text=True, env=env)
    if "--auth" in help_text.stdout:
        args += ["--auth", "none"]
    if "--rate-limit" in help_text.stdout:
        args += ["--rate-limit", "0"]
    if workers > 1:
        args += ["--workers", str(workers)]
    proc = subprocess.Popen(args, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}"
    for _ in range(200):
        try:
            if httpx.get(f"{url}/healthz").status_code == 200:
                return Server(url, proc)
        except httpx.HTTPError:
            time.sleep(0.05)
    raise RuntimeError("server did not start")


class Connection:
    """A minimal keep-alive HTTP/1.1 client, so the figures are the server's.

    httpx costs about 1.5 ms of the client's own CPU per request on this machine, more than
    the server's parsing and validation; the benchmark prints one httpx figure for reference.
    """

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader, self.writer = reader, writer

    @classmethod
    async def open(cls, url: str) -> Connection:
        host, port = url.removeprefix("http://").split(":")
        reader, writer = await asyncio.open_connection(host, int(port))
        return cls(reader, writer)

    async def post(self, path: str, body: bytes) -> dict[str, Any]:
        self.writer.write(
            f"POST {path} HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-type: application/json\r\n"
            f"content-length: {len(body)}\r\n\r\n".encode()
            + body
        )
        head = await self.reader.readuntil(b"\r\n\r\n")
        status = int(head.split(b" ", 2)[1])
        length = 0
        for line in head.split(b"\r\n")[1:]:
            name, _, value = line.partition(b":")
            if name.strip().lower() == b"content-length":
                length = int(value)
        payload = await self.reader.readexactly(length)
        if status != 200:
            raise RuntimeError(f"HTTP {status}: {payload[:300]!r}")
        result: dict[str, Any] = json.loads(payload)
        return result

    async def close(self) -> None:
        self.writer.close()
        await self.writer.wait_closed()


def launch_body(size: int) -> bytes:
    return json.dumps({"query": MUTATION, "variables": {"input": range_of(size)}}).encode()


def check(result: dict[str, Any], size: int) -> None:
    data = result["data"]["launchBackfill"]
    if data["backfill"] is None or data["backfill"]["counts"]["total"] != size:
        raise RuntimeError(f"launch failed: {data}")


async def latencies(url: str, size: int, count: int) -> list[float]:
    return (await interleaved_latencies(url, (size,), count))[size]


async def interleaved_latencies(
    url: str, sizes: tuple[int, ...], count: int
) -> dict[int, list[float]]:
    """``count`` launches of each size, taken in turn (1, 10,000, 1,000,000, 1, ...), so that
    a noisy moment of the machine or a growing database weighs on every size alike."""
    bodies = {size: launch_body(size) for size in sizes}
    out: dict[int, list[float]] = {size: [] for size in sizes}
    connection = await Connection.open(url)
    try:
        for _ in range(count):
            for size in sizes:
                started = time.perf_counter()
                result = await connection.post("/graphql/v1", bodies[size])
                out[size].append((time.perf_counter() - started) * 1000)
                check(result, size)
    finally:
        await connection.close()
    return out


async def httpx_latencies(url: str, count: int) -> list[float]:
    body = {"query": MUTATION, "variables": {"input": range_of(1)}}
    out: list[float] = []
    async with httpx.AsyncClient(base_url=url) as client:
        for _ in range(count):
            started = time.perf_counter()
            response = await client.post("/graphql/v1", json=body)
            out.append((time.perf_counter() - started) * 1000)
            check(response.json(), 1)
    return out


async def throughput(url: str, concurrency: int, seconds: float) -> float:
    body = launch_body(10_000)
    done = 0
    deadline = time.perf_counter() + seconds

    async def worker(connection: Connection) -> None:
        nonlocal done
        while time.perf_counter() < deadline:
            check(await connection.post("/graphql/v1", body), 10_000)
            done += 1

    connections = [await Connection.open(url) for _ in range(concurrency)]
    try:
        started = time.perf_counter()
        await asyncio.gather(*(worker(c) for c in connections))
        return done / (time.perf_counter() - started)
    finally:
        for connection in connections:
            await connection.close()


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


async def run(cache: bool, count: int) -> None:
    label = "cached" if cache else "uncached"
    with tempfile.TemporaryDirectory() as tmp:
        server = start_server(Path(tmp) / "bench.db", cache)
        try:
            await latencies(server.url, 1, 50)  # warm up
            sizes = (1, 10_000, 1_000_000) if cache else (1,)
            measured = await interleaved_latencies(server.url, sizes, count)
            for size, values in measured.items():
                print(
                    f"[{label}] launch {size:>9,} partitions: "
                    f"p50 {statistics.median(values):6.2f} ms"
                    f"  p99 {pct(values, 0.99):6.2f} ms  (n={count})"
                )
            if cache:
                ratio = statistics.median(measured[1_000_000]) / statistics.median(measured[1])
                print(f"[{label}] p50 of 1,000,000 partitions / p50 of 1: {ratio:.2f}")
                values = await httpx_latencies(server.url, count)
                print(
                    f"[{label}] launch         1 partitions, httpx client: "
                    f"p50 {statistics.median(values):6.2f} ms (for reference)"
                )
            for concurrency in (1, 8):
                rate = await throughput(server.url, concurrency, 5.0)
                print(f"[{label}] launches/s at concurrency {concurrency}: {rate:7.1f}")
        finally:
            server.stop()


async def run_workers(workers: int) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        server = start_server(Path(tmp) / "bench.db", True, workers)
        try:
            await latencies(server.url, 1, 50)
            # Keep-alive connections stay with the process that accepted them: with 8 the
            # split between processes is luck (4/4 or 7/1); 32 shows the balanced figure.
            for concurrency in (1, 8, 32):
                rate = await throughput(server.url, concurrency, 5.0)
                print(
                    f"[cached, {workers} processes] launches/s at concurrency {concurrency}: "
                    f"{rate:7.1f}"
                )
        finally:
            server.stop()


async def in_process(count: int, rounds: int = 5) -> None:
    """The application called straight through ASGI, no socket: the server's own cost, back to
    back and with a pause before each launch (as a server waiting for its next request); then
    eight concurrent callers (the group commit's case), as CPU time per launch."""
    from bench import _inproc

    body = launch_body(1)
    async with _inproc.app_on_database() as app:
        for _ in range(100):
            check(await _inproc.post(app, body), 1)
        for pause in (0.0, 0.002):
            medians = []
            for _ in range(rounds):
                values = []
                for _ in range(max(1, count // rounds)):
                    if pause:
                        await asyncio.sleep(pause)  # idle, as between requests
                    started = time.perf_counter()
                    check(await _inproc.post(app, body), 1)
                    values.append((time.perf_counter() - started) * 1000)
                medians.append(statistics.median(values))
            print(
                f"[in process] launch 1 partition, {pause * 1000:.0f} ms pause before each: "
                f"{spread(medians)} ms"
            )
        per_launch = []
        for _ in range(rounds):
            each = max(1, count // rounds // 8)

            async def caller(each: int) -> None:
                for _ in range(each):
                    check(await _inproc.post(app, body), 1)

            started = time.process_time()
            await asyncio.gather(*(caller(each) for _ in range(8)))
            per_launch.append((time.process_time() - started) / (8 * each) * 1000)
        print(
            "[in process] 8 concurrent callers, CPU per launch: "
            f"{spread(per_launch)} ms, i.e. {1000 / statistics.median(per_launch):.0f} launches/s"
        )


def spread(values: list[float]) -> str:
    """The median of per-round figures and their range."""
    return f"p50 {statistics.median(values):6.2f} (rounds {min(values):.2f} to {max(values):.2f})"


def main() -> None:
    count = int(os.environ.get("BENCH_COUNT", "500"))
    workers = int(os.environ.get("BENCH_WORKERS", str(os.cpu_count() or 2)))
    where = "PostgreSQL" if os.environ.get("BENCH_DATABASE_URL") else "SQLite"
    print(f"launchBackfill over HTTP, {where}; {os.cpu_count()} CPUs")
    asyncio.run(in_process(count))
    asyncio.run(run(True, count))
    asyncio.run(run(False, count))
    if workers > 1:
        asyncio.run(run_workers(workers))


if __name__ == "__main__":
    main()
