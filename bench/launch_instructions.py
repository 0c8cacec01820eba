"""Launches in process, to count the instructions a launch costs (machine-independent).

Runs 50 launches of one partition to warm up, then ``N`` more from ``C`` concurrent callers,
straight through ASGI on a fresh SQLite database. Under valgrind, the difference between two
counts is the cost of the launches between them, free of the machine's load::

    for n in 80 320; do N=$n C=1 valgrind --tool=callgrind --callgrind-out-file=/dev/null \\
        .venv/bin/python -m bench.launch_instructions 2>&1 | grep Collected; done

Instructions per launch = (second - first) / 240. Not a test; it prints nothing itself.
"""

from __future__ import annotations

import asyncio
import os

from bench import _inproc
from bench.launch import check, launch_body


async def main() -> None:
    body = launch_body(1)
    count, callers = int(os.environ.get("N", "320")), int(os.environ.get("C", "1"))
    async with _inproc.app_on_database() as app:
        for _ in range(50):
            check(await _inproc.post(app, body), 1)

        async def caller() -> None:
            for _ in range(count // callers):
                check(await _inproc.post(app, body), 1)

        await asyncio.gather(*(caller() for _ in range(callers)))


if __name__ == "__main__":
    asyncio.run(main())
