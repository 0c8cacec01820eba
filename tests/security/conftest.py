"""Fixtures of the security tests: tokens of every kind, and a live server that requires them."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
import pytest
from sqlalchemy import Engine, create_engine, func, literal, select, union_all
from sqlalchemy.pool import NullPool

from backfiller.domain.roles import Role
from backfiller.storage import Database
from backfiller.storage.auth import NewToken, TokenRepository
from backfiller.storage.auth_records import AuditRecord
from backfiller.storage.engine import sync_database_url
from backfiller.storage.metadata import metadata
from backfiller.storage.migrations import upgrade_database
from tests.conftest import _empty_postgres
from tests.support import LiveServer, live_server

DEFS = "tests.security.defs:definitions"


@dataclass(frozen=True)
class Tokens:
    viewer: str
    operator: str
    admin: str
    revoked: str
    expired: str

    def of(self, who: str) -> str | None:
        return None if who == "none" else str(getattr(self, who))


async def _make_tokens(url: str) -> Tokens:
    db = Database(url)
    now = datetime.now(UTC)
    secrets: dict[str, str] = {}
    try:
        async with db.write() as session:
            repo = TokenRepository(session)
            for name, role in (("viewer", Role.VIEWER), ("operator", Role.OPERATOR)):
                secrets[name] = (await repo.add(NewToken(name, role, None, "test"), now))[1]
            secrets["admin"] = (await repo.add(NewToken("admin", Role.ADMIN, None, "test"), now))[1]
            record, secrets["revoked"] = await repo.add(
                NewToken("revoked-admin", Role.ADMIN, None, "test"), now
            )
            await repo.revoke(record.id, now)
            secrets["expired"] = (
                await repo.add(
                    NewToken("expired-admin", Role.ADMIN, now - timedelta(seconds=1), "test"),
                    now - timedelta(days=1),
                )
            )[1]
    finally:
        await db.dispose()
    return Tokens(**secrets)


@pytest.fixture(scope="module")
def shared_database_url(
    tmp_path_factory: pytest.TempPathFactory, pg_template_url: str | None
) -> str:
    """A migrated, empty database shared by one test module (servers are slow to start).

    Tests that use it must not also use ``database_url`` (which empties PostgreSQL).
    """
    if pg_template_url is not None:
        _empty_postgres(pg_template_url)
        return pg_template_url
    url = f"sqlite:///{tmp_path_factory.mktemp('security') / 'backfiller.db'}"
    upgrade_database(url)
    return url


@pytest.fixture(scope="module")
def tokens(shared_database_url: str) -> Tokens:
    return asyncio.run(_make_tokens(shared_database_url))


_clients: dict[str, httpx.Client] = {}
# Idle connections are dropped after 0.5 s, well before the server closes them: some of these
# servers give a client 3 s to send its next request (BACKFILLER_CLIENT_TIMEOUT), and a request
# sent just as the server closes its idle connection fails ("Server disconnected without
# sending a response"), as the Python client's own 2 s (under the default 5 s keep-alive) avoids.
IDLE_LIMITS = httpx.Limits(keepalive_expiry=0.5)


def client_of(server: LiveServer) -> httpx.Client:
    """One keep-alive HTTP client per server (close it with :func:`close_client`)."""
    found = _clients.get(server.url)
    if found is None:
        found = _clients[server.url] = httpx.Client(
            base_url=server.url, timeout=30, limits=IDLE_LIMITS
        )
    return found


def close_client(server: LiveServer) -> None:
    found = _clients.pop(server.url, None)
    if found is not None:
        found.close()


def token_server(definitions: str = DEFS, **options: Any) -> Any:
    """A pytest fixture of a server with ``--auth token`` (the default of ``serve``) on the
    module's ``shared_database_url``, shared by the module, set up after its ``tokens``; its
    keep-alive client (:func:`client_of`) is closed before it stops. ``options`` go to
    :func:`tests.support.live_server` (``extra`` is ``--rate-limit 0`` unless given)::

        server = token_server(extra=["--rate-limit", "3"])
    """
    options.setdefault("extra", ["--rate-limit", "0"])
    return live_server(
        definitions,
        scope="module",
        database="shared_database_url",
        needs=("tokens",),
        auth="token",
        before_stop=close_client,
        **options,
    )


secure_server = token_server()
"""A server with ``--auth token``, shared by a module."""


def bearer(token: str | None) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"} if token else {}


def gql(
    server: LiveServer,
    query: str,
    variables: dict[str, Any] | None = None,
    token: str | None = None,
    headers: dict[str, str] | None = None,
) -> httpx.Response:
    return client_of(server).post(
        "/graphql/v1",
        json={"query": query, "variables": variables or {}},
        headers={**bearer(token), **(headers or {})},
    )


_engines: dict[str, Engine] = {}


def row_counts(url: str, ignore: tuple[str, ...] = ()) -> dict[str, int]:
    """Rows of every table (all that a request could have changed), minus ``ignore``."""
    engine = _engines.get(url)
    if engine is None:
        engine = _engines[url] = create_engine(sync_database_url(url), poolclass=NullPool)
    tables = [t for t in metadata.sorted_tables if t.name not in ignore]
    statement = union_all(
        *(
            select(literal(t.name).label("name"), func.count().label("n")).select_from(t)
            for t in tables
        )
    )
    with engine.connect() as connection:
        return {name: int(n) for name, n in connection.execute(statement)}


async def audit_entries(url: str) -> list[AuditRecord]:
    """Every audit entry, oldest first."""
    db = Database(url)
    try:
        async with db.read() as session:
            found = await session.execute(select(AuditRecord).order_by(AuditRecord.id))
            return list(found.scalars())
    finally:
        await db.dispose()


def audit_entries_sync(url: str) -> list[AuditRecord]:
    return asyncio.run(audit_entries(url))
