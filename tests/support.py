"""Helpers for tests: a frozen clock, a GraphQL runner, live server processes, counters."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
from sqlalchemy import Table, event, func, select

from backfiller.api import build_schema
from backfiller.config import Settings
from backfiller.definitions.loading import Definitions
from backfiller.domain import Order, Reprocess, SelectionKind
from backfiller.resolvers.access import ANONYMOUS_ADMIN, Principal
from backfiller.resolvers.context import Context, Services
from backfiller.resolvers.source import StorageSource
from backfiller.storage import Database
from backfiller.storage.launches import NewBackfill
from backfiller.storage.records import Base

REPO = Path(__file__).resolve().parent.parent


@dataclass
class FrozenClock:
    now: datetime

    def __call__(self) -> datetime:
        return self.now

    def advance(self, **kwargs: float) -> None:
        self.now += timedelta(**kwargs)


@dataclass
class GraphQLRunner:
    database: Database
    definitions: Definitions
    settings: Settings
    clock: FrozenClock
    actor: str | None = None
    principal: Principal | None = ANONYMOUS_ADMIN
    """Who asks; every field is refused without one (set None to test that)."""
    services: Services = field(init=False)

    def __post_init__(self) -> None:
        self.services = Services(
            database=self.database,
            definitions=self.definitions,
            settings=self.settings,
            clock=self.clock,
        )
        self.schema = build_schema(self.settings)

    def context(self) -> Context:
        return Context(
            services=self.services,
            source=StorageSource(self.services),
            actor=self.actor,
            request_id="test",
            principal=self.principal,
        )

    async def raw(self, query: str, variables: dict[str, Any] | None = None) -> Any:
        return await self.schema.execute(
            query, variable_values=variables, context_value=self.context()
        )

    async def __call__(self, query: str, variables: dict[str, Any] | None = None) -> Any:
        """Execute and return ``data``; fails the test on any top-level error."""
        result = await self.raw(query, variables)
        assert result.errors is None, result.errors
        return result.data


async def count_rows(database: Database, record: type[Base] | Table) -> int:
    async with database.read() as session:
        return int((await session.execute(select(func.count()).select_from(record))).scalar_one())


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class LiveProcess:
    """A real ``backfiller`` process (server or daemon) for acceptance tests."""

    def __init__(
        self, args: list[str], env: dict[str, str] | None = None, cwd: Path | None = None
    ) -> None:
        self.args = args
        full_env = {**os.environ, **(env or {})}
        full_env.setdefault("PYTHONPATH", str(REPO))
        self.log_path = Path(tempfile.mkstemp(prefix="backfiller-proc-", suffix=".log")[1])
        self.log = open(self.log_path, "w")  # noqa: SIM115
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "backfiller", *args],
            env=full_env,
            cwd=cwd or REPO,
            stdout=self.log,
            stderr=subprocess.STDOUT,
        )

    def output(self) -> str:
        self.log.flush()
        return self.log_path.read_text()

    def output_once_it_says(self, text: str, timeout: float = 15) -> str:
        """The output, as soon as it contains ``text`` (or when ``timeout`` runs out).

        A server answers its health check a moment before it prints its banner.
        """
        deadline = time.monotonic() + timeout
        while text not in (found := self.output()) and time.monotonic() < deadline:
            time.sleep(0.05)
        return found

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(5)
        self.log.close()
        self.log_path.unlink(missing_ok=True)


class LiveServer(LiveProcess):
    def __init__(
        self,
        database_url: str,
        definitions: str | None = None,
        extra: list[str] | None = None,
        env: dict[str, str] | None = None,
        cwd: Path | None = None,
        command: str = "serve",
        auth: str | None = "none",
    ) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        args = [
            command,
            "--database",
            database_url,
            "--host",
            "127.0.0.1",
            "--port",
            str(self.port),
        ]
        if definitions:
            args += ["--definitions", definitions]
        if auth is not None and (command == "serve" or auth != "none"):
            args += ["--auth", auth]
        super().__init__(args + (extra or []), env=env, cwd=cwd)
        try:
            self.wait_ready()
        except BaseException:
            self.stop()
            raise

    def wait_ready(self, timeout: float = 90) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"server exited: {self.output()}")
            try:
                if httpx.get(f"{self.url}/healthz", timeout=1).status_code == 200:
                    return
            except httpx.HTTPError:
                pass
            time.sleep(0.1)
        raise RuntimeError(f"server not ready: {self.output()}")

    def graphql(
        self,
        query: str,
        variables: dict[str, Any] | None = None,
        headers: dict[str, str] | None = None,
        path: str = "/graphql/v1",
    ) -> Any:
        response = httpx.post(
            f"{self.url}{path}",
            json={"query": query, "variables": variables or {}},
            headers=headers,
            timeout=30,
        )
        return response


def new_backfill(key: str | None = None, **changes: Any) -> NewBackfill:
    """A backfill as a launch of ``daily_sales`` over two days would insert it."""
    values: dict[str, Any] = {
        "job_name": "daily_sales",
        "selection_kind": SelectionKind.RANGE,
        "range_start": "2024-01-01",
        "range_end": "2024-01-02",
        "keys": None,
        "partitions_fingerprint": "f",
        "first_index": 0,
        "total": 2,
        "reprocess": Reprocess.MISSING,
        "order": Order.OLDEST_FIRST,
        "max_concurrent_runs": None,
        "run_config": None,
        "tags": [],
        "title": None,
        "description": None,
        "idempotency_key": key,
        "request_fingerprint": "r",
        "creator": None,
    }
    return NewBackfill(**{**values, **changes})


def commits_of(database: Database) -> list[int]:
    """A counter of the write engine's commits, from now on (its one item)."""
    counted = [0]

    @event.listens_for(database.write_engine.sync_engine, "commit")
    def _count(_conn: Any) -> None:
        counted[0] += 1

    return counted
