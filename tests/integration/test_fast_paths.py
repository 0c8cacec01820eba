"""The one switch of the speed paths (``Settings.fast_paths``, ``BACKFILLER_FAST_PATHS``): off,
each takes the library's own path. That the answers stay the same is what the integration and
security tiers prove when CI runs them with it off (``make test-slow-paths``); here, that the
switch reaches each path."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from sqlalchemy import Connection, insert
from sqlalchemy.util import greenlet_spawn

from backfiller.api import FastExecutor, SecureExecutor, build_schema
from backfiller.config import Settings
from backfiller.storage import Database
from backfiller.storage.greenlets import run_sync
from backfiller.storage.launches import _backfill_values
from backfiller.storage.prepared import Prepared
from backfiller.storage.records import BackfillRecord, table_of
from tests.support import new_backfill

NOW = datetime(2026, 6, 15, 12, tzinfo=UTC)


def test_the_switch_reads_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("BACKFILLER_FAST_PATHS", raising=False)
    assert Settings().fast_paths
    for off in ("0", "false", "no", "off", " OFF "):
        monkeypatch.setenv("BACKFILLER_FAST_PATHS", off)
        assert not Settings().fast_paths
        assert not Settings.from_env().fast_paths
    monkeypatch.setenv("BACKFILLER_FAST_PATHS", "1")
    assert Settings().fast_paths


@pytest.mark.parametrize("fast", [True, False])
async def test_statements_and_greenlets_follow_the_switch(database_url: str, fast: bool) -> None:
    """Prepared statements (SQLite) and reused greenlets when on; ``Connection.execute`` and
    SQLAlchemy's ``greenlet_spawn`` when off; the same row stored either way."""
    database = Database(database_url, fast_paths=fast)
    statement = Prepared(insert(table_of(BackfillRecord)))
    values = {**_backfill_values(new_backfill(), NOW), "id": 7}

    def insert_one(conn: Connection) -> None:
        statement.many(conn, [values])

    try:
        assert database.run_sync is (run_sync if fast else greenlet_spawn)
        await database.transact(insert_one)
        async with database.read() as session:
            stored = await session.get(BackfillRecord, 7)
    finally:
        await database.dispose()
    assert stored is not None and stored.job_name == "daily_sales"
    prepared_here = fast and database.is_sqlite
    assert bool(statement._plans) is prepared_here


@pytest.mark.parametrize("fast", [True, False])
def test_the_api_follows_the_switch(fast: bool) -> None:
    settings = Settings(fast_paths=fast)
    built = build_schema(settings)
    assert built.execution_context_class is (FastExecutor if fast else SecureExecutor)
    assert built.remembers_hooks is fast
