"""The application called straight through ASGI (no socket), for the in-process figures.

Shared by the benchmarks: what a request costs the server itself, without uvicorn, the
loopback and the client's own CPU.
"""

from __future__ import annotations

import asyncio
import cProfile
import dataclasses
import json
import os
import pstats
import tempfile
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from starlette.types import ASGIApp


@asynccontextmanager
async def app_on_database(definitions: Any = None) -> AsyncIterator[ASGIApp]:
    """The API's ASGI app (auth and rate limit off) on ``BENCH_DATABASE_URL`` (upgraded here),
    else on a fresh SQLite database; with ``definitions`` (default: ``bench.defs``'s)."""
    from backfiller.cli.server import prepare_database
    from backfiller.config import AuthMode, Settings
    from backfiller.resolvers.context import Services
    from backfiller.storage import Database
    from backfiller.storage.migrations import upgrade_database
    from backfiller.web.app import create_app
    from bench.defs import definitions as bench_definitions

    definitions = definitions or bench_definitions

    with tempfile.TemporaryDirectory() as tmp:
        given = os.environ.get("BENCH_DATABASE_URL")
        if given:
            upgrade_database(given)
        url = prepare_database(given or f"sqlite:///{Path(tmp) / 'bench.db'}")
        settings = dataclasses.replace(
            Settings.from_env(), database_url=url, auth_mode=AuthMode.NONE, launch_rate_limit=0
        )
        database = Database(url)
        try:
            yield create_app(
                Services(database=database, definitions=definitions, settings=settings)
            )
        finally:
            await database.dispose()


async def post(app: ASGIApp, body: bytes, path: str = "/graphql/v1") -> dict[str, Any]:
    """POST ``body`` (JSON) to ``app`` and return the decoded JSON answer."""
    sent = False
    scope = {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": "POST",
        "scheme": "http",
        "path": path,
        "raw_path": path.encode(),
        "query_string": b"",
        "root_path": "",
        "headers": [
            (b"host", b"127.0.0.1"),
            (b"content-type", b"application/json"),
            (b"content-length", str(len(body)).encode()),
        ],
        "client": ("127.0.0.1", 50000),
        "server": ("127.0.0.1", 8000),
    }
    answer: list[bytes] = []

    async def receive() -> dict[str, Any]:
        nonlocal sent
        if sent:
            await asyncio.Event().wait()  # the client never goes away
        sent = True
        return {"type": "http.request", "body": body, "more_body": False}

    async def send(message: dict[str, Any]) -> None:
        if message["type"] == "http.response.body":
            answer.append(message.get("body", b""))

    await app(scope, receive, send)  # type: ignore[arg-type]
    result: dict[str, Any] = json.loads(b"".join(answer))
    return result


async def profile(app: ASGIApp, body: bytes, count: int, top: int = 25) -> None:
    """Print where ``count`` calls of ``body`` spend their time (cProfile, by own time)."""
    profiler = cProfile.Profile()
    profiler.enable()
    for _ in range(count):
        await post(app, body)
    profiler.disable()
    stats = pstats.Stats(profiler)
    stats.sort_stats("tottime").print_stats(top)
