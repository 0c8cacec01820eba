"""Server CPU per launch over HTTP: ``/proc`` of one ``backfiller serve`` process (SQLite)
around rounds of launches from 8 concurrent keep-alive clients (``bench.launch``'s client).

Prints launches per second and the server's own CPU time per launch for each round: the CPU
figure holds still on a shared machine where the rate moves with the neighbours. Linux only.
Run with ``python -m bench.launch_cpu`` (``ROUNDS``, ``SECONDS_EACH``). Not a test.
"""

from __future__ import annotations

import asyncio
import os
import tempfile
import time
from pathlib import Path

from bench.launch import start_server, throughput
from bench.proc_cpu import process_cpu


async def main() -> None:
    rounds = int(os.environ.get("ROUNDS", "3"))
    seconds = float(os.environ.get("SECONDS_EACH", "8"))
    with tempfile.TemporaryDirectory() as tmp:
        server = start_server(Path(tmp) / "bench.db", cache=True)
        try:
            await throughput(server.url, 8, 2.0)  # warm-up
            for _ in range(rounds):
                used, started = process_cpu(server.proc.pid), time.perf_counter()
                rate = await throughput(server.url, 8, seconds)
                used = process_cpu(server.proc.pid) - used
                launches = rate * (time.perf_counter() - started)
                print(
                    f"launches/s at concurrency 8: {rate:7.1f}   "
                    f"server CPU per launch: {used / launches * 1000:.3f} ms"
                )
        finally:
            server.stop()


if __name__ == "__main__":
    asyncio.run(main())
