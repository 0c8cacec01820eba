"""The migrations: they build exactly the ORM models' schema, and convert stored rows."""

from __future__ import annotations

import copy
import sqlite3
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from alembic import command
from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext
from sqlalchemy import column, create_engine, insert, select, table, text

from backfiller.services.trigger_requests import from_json
from backfiller.storage.engine import sync_database_url
from backfiller.storage.history_partitions import is_partition
from backfiller.storage.launches import _backfill_values
from backfiller.storage.migrations import alembic_config, upgrade_database
from backfiller.storage.records import BackfillRecord, Base, table_of
from backfiller.storage.trigger_records import TriggerEvaluationRecord
from tests.support import new_backfill


def test_the_migrations_build_exactly_the_models_schema(database_url: str) -> None:
    """On SQLite, and on PostgreSQL when ``BACKFILLER_TEST_DATABASE_URL`` is set."""
    engine = create_engine(sync_database_url(database_url))
    try:
        with engine.connect() as conn:
            context = MigrationContext.configure(conn, opts={"include_name": _not_a_partition})
            diff = compare_metadata(context, Base.metadata)
    finally:
        engine.dispose()
    assert diff == []


def _not_a_partition(name: str | None, kind: str, _: Any) -> bool:
    return kind != "table" or not is_partition(name)


def test_a_new_sqlite_database_is_built_in_the_services_journal_mode(tmp_path: Path) -> None:
    """The migrations run in WAL, the mode every connection of the service sets: no journal
    file made and deleted per statement."""
    path = tmp_path / "fresh.db"
    upgrade_database(f"sqlite:///{path}")
    conn = sqlite3.connect(path)
    try:
        assert conn.execute("PRAGMA journal_mode").fetchone() == ("wal",)
    finally:
        conn.close()
    assert not path.with_name("fresh.db-journal").exists()


# An evaluation's requests as 0003-0004 stored them: the public GraphQL shape.
PUBLIC_SHAPED: list[dict[str, Any]] = [
    {
        "input": {
            "target": {"job": "daily_sales"},
            "partitions": {"range": {"start": "2026-01-01", "end": "2026-01-03"}},
            "reprocess": "FAILED_AND_MISSING",
            "order": "NEWEST_FIRST",
            "tags": [{"key": "team", "value": "ops"}],
            "maxConcurrentRuns": 4,
            "runConfig": {"limit": 3},
            "title": "Q1",
            "idempotencyKey": "k-1",
        },
        "preview": {
            "job": "daily_sales",
            "total": 3,
            "runs": 2,
            "skipped": 1,
            "firstPartitions": ["2026-01-03", "2026-01-01"],
            "skippedPartitions": [{"key": "2026-01-02", "reason": "ALREADY_SUCCEEDED"}],
        },
        "errors": [],
        "backfillId": None,
    },
    {
        "input": {
            "target": {"job": "nope"},
            "partitions": {"all": True},
            "reprocess": "MISSING",
            "order": "OLDEST_FIRST",
            "tags": [],
        },
        "preview": None,
        "errors": [
            {"code": "JOB_NOT_FOUND", "field": ["target", "job"], "message": "no job named 'nope'"},
            {"code": "INVALID_RUN_CONFIG", "field": ["runConfig", "limit"], "message": "bad"},
        ],
        "backfillId": None,
    },
    {
        "input": {
            "target": {"job": "regions"},
            "partitions": {"keys": ["emea", "apac"]},
            "reprocess": "ALL",
            "order": "OLDEST_FIRST",
            "tags": [],
        },
        "preview": None,
        "errors": [],
        "backfillId": 7,
    },
]


def test_0006_rewrites_stored_trigger_requests_in_the_private_shape_and_back(
    tmp_path: Path,
) -> None:
    url = f"sqlite:///{tmp_path / 'old.db'}"
    upgrade_database(url, "0004")
    engine = create_engine(url)
    table = table_of(TriggerEvaluationRecord)
    now = datetime(2026, 1, 5, tzinfo=UTC)
    with engine.begin() as conn:
        conn.execute(
            insert(table).values(
                trigger_name="t",
                outcome="launched",
                started_at=now,
                evaluated_at=now,
                duration_seconds=0.1,
                dry_run=True,
                backfill_ids=[7],
                requests=copy.deepcopy(PUBLIC_SHAPED),
            )
        )
    upgrade_database(url, "0006")
    with engine.connect() as conn:
        stored = conn.execute(select(table.c.requests)).scalar_one()
    previewed, refused, launched = (from_json(e) for e in stored)
    assert previewed.request.job == "daily_sales"
    assert previewed.request.reprocess.value == "failed_and_missing"
    assert previewed.request.order.value == "newest_first"
    assert previewed.request.selection.range_start == "2026-01-01"
    assert previewed.request.tags == (("team", "ops"),)
    assert previewed.request.max_concurrent_runs == 4
    assert previewed.request.run_config == {"limit": 3}
    assert previewed.request.idempotency_key == "k-1"
    assert previewed.preview is not None
    assert previewed.preview.skipped_partitions[0][1].value == "already_succeeded"
    assert [(p.code.value, p.field) for p in refused.problems] == [
        ("job_not_found", ("job",)),
        ("invalid_run_config", ("run_config", "limit")),
    ]
    assert launched.request.selection.keys == ("emea", "apac")
    assert launched.backfill_id == 7
    command.downgrade(alembic_config(url), "0004")
    with engine.connect() as conn:
        restored = conn.execute(select(table.c.requests)).scalar_one()
    engine.dispose()
    assert restored == PUBLIC_SHAPED


def test_0030_gives_asset_backfills_their_kind_instead_of_a_job_name_and_back(
    tmp_path: Path,
) -> None:
    url = f"sqlite:///{tmp_path / 'old.db'}"
    upgrade_database(url, "0012")
    engine = create_engine(url)
    now = datetime(2026, 1, 5, tzinfo=UTC)
    old = table_of(BackfillRecord)
    later = ("kind", "id", "team", "priority")  # id: numbered; the others came after 0012
    columns = [c for c in old.c if c.name not in later]  # as 0012 has the table
    target = {"names": ["a"], "upstream": False, "downstream": False, "parts": []}
    with engine.begin() as conn:
        for name, asset_target in (("daily_sales", None), ("@assets", target)):
            values = _backfill_values(new_backfill(job_name=name, asset_target=asset_target), now)
            as_then = table("backfills", *(column(c.name, c.type) for c in columns))
            conn.execute(insert(as_then).values({c.name: values[c.name] for c in columns}))
    upgrade_database(url, "0030")
    with engine.connect() as conn:
        rows = conn.execute(select(old.c.id, old.c.kind, old.c.job_name).order_by(old.c.id))
        assert [tuple(r) for r in rows] == [(1, "job", "daily_sales"), (2, "assets", "")]
    command.downgrade(alembic_config(url), "0012")
    with engine.connect() as conn:
        names = conn.execute(text("SELECT job_name FROM backfills ORDER BY id")).scalars().all()
    engine.dispose()
    assert names == ["daily_sales", "@assets"]
