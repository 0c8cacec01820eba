"""Helpers for tests: a frozen clock, a GraphQL runner, live server processes and a fixture
factory for them, the launch operation and its helpers, ``wait_for``, counters."""

from __future__ import annotations

import functools
import os
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, TypeVar

import httpx
import pytest
from sqlalchemy import Table, event, func, select

from backfiller.api import PublicSchema, build_schema
from backfiller.config import Settings
from backfiller.definitions.loading import Definitions
from backfiller.domain import Order, Reprocess, SelectionKind
from backfiller.resolvers.access import ANONYMOUS_ADMIN, Principal
from backfiller.resolvers.context import Context, Services
from backfiller.resolvers.source import StorageSource
from backfiller.storage import Database
from backfiller.storage.launches import NewBackfill
from backfiller.storage.records import Base
from backfiller.testing import FrozenClock as FrozenClock  # the users' kit, here too
from tests import launchpad

REPO = Path(__file__).resolve().parent.parent
T = TypeVar("T")

LAUNCH = """
mutation($input: LaunchBackfillInput!) {
  launchBackfill(input: $input) { backfill { id } userErrors { code message field } }
}
"""
"""The launch every test sends: the new backfill's id, or why not."""
LAUNCH_WITH_TARGET = """
mutation($input: LaunchBackfillInput!) {
  launchBackfill(input: $input) {
    backfill { id target { job assets { names upstream downstream assets } } }
    userErrors { code message field }
  }
}
"""
"""The launch, and the target the new backfill records (a job, or its assets)."""
LAUNCH_WITH_CREATOR = """
mutation($input: LaunchBackfillInput!) {
  launchBackfill(input: $input) { backfill { id creator } userErrors { code message field } }
}
"""
"""The launch, and who the new backfill records as its creator (a token's name, a run's)."""


def launch_input(
    target: str | dict[str, Any], start: str | None = None, end: str | None = None, **extra: Any
) -> dict[str, Any]:
    """``LaunchBackfillInput``: of a job over the range ``start`` to ``end`` (with ``extra``
    fields, named as the API names them), or ``target`` itself when it is a whole input."""
    if isinstance(target, dict):
        return {**target, **extra}
    assert start is not None and end is not None
    return {
        "target": {"job": target},
        "partitions": {"range": {"start": start, "end": end}},
        **extra,
    }


def launched_id(data: dict[str, Any]) -> str:
    """The id of the backfill a ``LAUNCH`` answered; fails the test on a user error."""
    payload = data["launchBackfill"]
    assert payload["userErrors"] == [], payload["userErrors"]
    backfill_id: str = payload["backfill"]["id"]
    return backfill_id


async def launch(
    gql: GraphQLRunner,
    target: str | dict[str, Any],
    start: str | None = None,
    end: str | None = None,
    **extra: Any,
) -> str:
    """Launch through the schema (``schema.execute``) what :func:`launch_input` makes of the
    arguments; the new backfill's id."""
    return launched_id(await gql(LAUNCH, {"input": launch_input(target, start, end, **extra)}))


def launch_over_http(
    server: LiveServer,
    target: str | dict[str, Any],
    start: str | None = None,
    end: str | None = None,
    **extra: Any,
) -> str:
    """The same, through a live server's ``/graphql/v1``."""
    answer = server.graphql(LAUNCH, {"input": launch_input(target, start, end, **extra)})
    assert answer.status_code == 200, answer.text
    body = answer.json()
    assert "errors" not in body, body
    return launched_id(body["data"])


def wait_for(
    what: str, check: Callable[[], T | None], timeout: float = 60, every: float = 0.1
) -> T:
    """Poll ``check`` until it returns something true, and return that; fail naming ``what``
    (with the last answer) after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    last: T | None = None
    while time.monotonic() < deadline:
        last = check()
        if last:
            return last
        time.sleep(every)
    raise AssertionError(f"timed out waiting for {what}; last: {last!r}")


@functools.cache
def schema_of(settings: Settings) -> PublicSchema:
    """The schema a server of ``settings`` builds, built once per test process (a schema holds
    no state of its own but its caches of parsed documents; building one takes 50 ms)."""
    return build_schema(settings)


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
        self.schema = schema_of(self.settings)

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


# `httpx.get` and `httpx.post` build a client, and with it a TLS context from the CA bundle, for
# every call: about 20 ms of CPU each here, most of a polling test's own CPU. This client serves
# the tests' plain requests instead, each on a new connection as theirs (no connection is kept
# alive), for about 0.4 ms.
HTTP = httpx.Client(limits=httpx.Limits(max_keepalive_connections=0))


def answers(url: str, timeout: float = 1) -> bool:
    """Whether ``url`` answers 200 (a health or readiness check) within ``timeout`` seconds."""
    try:
        return HTTP.get(url, timeout=timeout).status_code == 200
    except httpx.HTTPError:
        return False


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class LiveProcess:
    """A real ``backfiller`` process (server or daemon) for acceptance tests.

    Its output goes to a temporary file, removed when it stops unless
    ``BACKFILLER_TEST_KEEP_LOGS`` is set (to read a failed test's server log afterwards).
    It is forked from a preloaded Python (:mod:`tests.launchpad`); ``fresh``: started as a new
    interpreter instead, for a test of what only a new one shows (a process's memory map).
    """

    def __init__(
        self,
        args: list[str],
        env: dict[str, str] | None = None,
        cwd: Path | None = None,
        fresh: bool = False,
    ) -> None:
        self.args = args
        full_env = {**os.environ, **(env or {})}
        full_env.setdefault("PYTHONPATH", str(REPO))
        self.log_path = Path(tempfile.mkstemp(prefix="backfiller-proc-", suffix=".log")[1])
        self.log = open(self.log_path, "w")  # noqa: SIM115
        self.proc: subprocess.Popen[bytes] | launchpad.PadChild
        if fresh or os.environ.get("BACKFILLER_TEST_FRESH_PROCESSES"):
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "backfiller", *args],
                env=full_env,
                cwd=cwd or REPO,
                stdout=self.log,
                stderr=subprocess.STDOUT,
            )
        else:  # the same command, forked from a preloaded Python (tests/launchpad.py)
            self.proc = launchpad.start(args, full_env, cwd or REPO, self.log_path)

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
        if not os.environ.get("BACKFILLER_TEST_KEEP_LOGS"):
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
        fresh: bool = False,
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
        super().__init__(args + (extra or []), env=env, cwd=cwd, fresh=fresh)
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
            if answers(f"{self.url}/healthz"):
                return
            time.sleep(0.1)
        raise RuntimeError(f"server not ready: {self.output()}")

    def graphql(
        self,
        query: str,
        variables: dict[str, Any] | None = None,
        headers: dict[str, str] | None = None,
        path: str = "/graphql/v1",
    ) -> Any:
        response = HTTP.post(
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


def live_server(
    definitions: str | None = None,
    *,
    scope: Literal["function", "module"] = "function",
    database: str = "database_url",
    needs: tuple[str, ...] = (),
    server: type[LiveServer] | None = None,
    before_stop: Callable[[LiveServer], None] | None = None,
    **options: Any,
) -> Any:
    """A pytest fixture of a live server (``server``, :class:`LiveServer` by default) of
    ``definitions`` on the database of the fixture named ``database``, stopped after its
    ``scope``; the fixtures named in ``needs`` are set up first (a daemon, say), and
    ``before_stop`` is called with the server before it stops. ``options`` go to the server
    (``auth``, ``extra``, ``env``, ``command``). In a test module::

        server = live_server(DEFINITIONS)
        secured = live_server(DEFINITIONS, auth="token")
    """

    @pytest.fixture(scope=scope)
    def fixture(request: pytest.FixtureRequest) -> Iterator[LiveServer]:
        for name in needs:
            request.getfixturevalue(name)
        url: str = request.getfixturevalue(database)
        live = (server or LiveServer)(url, definitions, **options)
        try:
            yield live
        finally:
            if before_stop is not None:
                before_stop(live)
            live.stop()

    return fixture
