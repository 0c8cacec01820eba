"""Migration 0050 on a database with runs: the rows are kept (on PostgreSQL in ``runs`` and
``slots`` partitioned as the history is), ``active_runs`` holds the active ones and its
triggers refuse a second active run of a (job, partition); and back."""

from __future__ import annotations

import itertools
import os
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import pytest
from alembic import command
from sqlalchemy import Connection, Engine, create_engine, insert, inspect, text
from sqlalchemy.exc import IntegrityError

from backfiller.storage.launches import _backfill_values
from backfiller.storage.migrations import alembic_config, upgrade_database
from backfiller.storage.records import BackfillRecord, RunRecord, SlotRecord, table_of
from tests.support import new_backfill

NOW = datetime(2026, 1, 5, tzinfo=UTC)
FAR = 2000
"""A backfill id beyond the ranges 0049 makes in a new database ([0, 1), [1, 1001)): its rows
are in the ``DEFAULT`` partitions."""
ATTEMPTS = itertools.count(10)
TAKEN = "active_runs"
"""What the error of a second active run names (the key of ``active_runs``, either database)."""


@pytest.fixture
def engine(fresh_url: str) -> Iterator[Engine]:
    """The database at 0049 with :func:`_runs_at_0049`'s rows (and an engine on it)."""
    upgrade_database(fresh_url, "0049")
    made = create_engine(fresh_url)
    with made.begin() as conn:
        _runs_at_0049(conn)
    try:
        yield made
    finally:
        made.dispose()


def _backfill(conn: Connection, backfill_id: int | None = None) -> int:
    values = _backfill_values(new_backfill(job_name="daily"), NOW)
    if backfill_id is not None:
        values["id"] = backfill_id
    t = table_of(BackfillRecord)
    return int(conn.execute(insert(t).values(values).returning(t.c.id)).scalar_one())


def _slot(conn: Connection, backfill: int, key: str, position: int) -> int:
    t = table_of(SlotRecord)
    values = {
        "backfill_id": backfill,
        "position": position,
        "partition_key": key,
        "status": "running",
        "attempts": 1,
        "free_attempts": 0,
        "lost_attempts": 0,
        "updated_at": NOW,
    }
    return int(conn.execute(insert(t).values(values).returning(t.c.id)).scalar_one())


def _run(
    conn: Connection,
    backfill: int,
    slot: int,
    key: str,
    status: str,
    attempt: int = 1,
    job: str = "daily",
) -> int:
    t = table_of(RunRecord)
    values = {
        "backfill_id": backfill,
        "slot_id": slot,
        "job_name": job,
        "partition_key": key,
        "attempt": attempt,
        "status": status,
        "queued_at": NOW,
        "partition_count": 1,
        "worker": f"w-{status}",
    }
    return int(conn.execute(insert(t).values(values).returning(t.c.id)).scalar_one())


def _runs_at_0049(conn: Connection) -> None:
    """Three backfills of ``daily`` (one of them far), runs of every kind: ids 1 to 7."""
    first, second, far = _backfill(conn), _backfill(conn), _backfill(conn, FAR)
    s1, s2 = _slot(conn, first, "k1", 0), _slot(conn, first, "k2", 1)
    _run(conn, first, s1, "k1", "failed")  # 1
    _run(conn, first, s1, "k1", "running", attempt=2)  # 2: active
    _run(conn, first, s2, "k2", "queued")  # 3: active
    s3, s4 = _slot(conn, second, "k1", 0), _slot(conn, second, "k3", 1)
    _run(conn, second, s3, "k1", "success")  # 4
    _run(conn, second, s4, "k3", "running")  # 5: active
    s5 = _slot(conn, far, "k4", 0)
    _run(conn, far, s5, "k4", "queued")  # 6: active, in the default partition
    _run(conn, far, s5, "k4", "canceled", attempt=2, job="weekly")  # 7


def _rows(conn: Connection, table: str) -> list[tuple[Any, ...]]:
    return [tuple(r) for r in conn.execute(text(f"SELECT * FROM {table} ORDER BY id"))]


def _active(conn: Connection) -> set[tuple[Any, ...]]:
    rows = conn.execute(
        text("SELECT job_name, partition_key, run_id, backfill_id FROM active_runs")
    )
    return {tuple(r) for r in rows}


def _at(engine: Engine, statement: str, **params: Any) -> None:
    with engine.begin() as conn:
        conn.execute(text(statement), params)


def _insert_run(engine: Engine, backfill: int, key: str, status: str, slot: int = 99) -> int:
    """A run of ``daily`` inserted in a transaction of its own (each a new attempt)."""
    with engine.begin() as conn:
        return _run(conn, backfill, slot, key, status, attempt=next(ATTEMPTS))


def test_0050_keeps_the_rows_and_lets_one_run_of_a_partition_be_active(
    engine: Engine, fresh_url: str
) -> None:
    with engine.connect() as conn:
        runs, slots = _rows(conn, "runs"), _rows(conn, "slots")
    upgrade_database(fresh_url, "0050")
    with engine.connect() as conn:
        assert _rows(conn, "runs") == runs
        assert _rows(conn, "slots") == slots
        assert _active(conn) == {
            ("daily", "k1", 2, 1),
            ("daily", "k2", 3, 1),
            ("daily", "k3", 5, 2),
            ("daily", "k4", 6, FAR),
        }
    # A second active run of (daily, k1), in another backfill: refused, queued or running.
    for status in ("queued", "running"):
        with pytest.raises(IntegrityError, match=TAKEN):
            _insert_run(engine, 3, "k1", status)
    _insert_run(engine, 3, "k1", "success")  # a finished one is no active run
    _insert_run(engine, 3, "k1", "skipped")
    _at(engine, "UPDATE runs SET status = 'running' WHERE id = 3")  # active to active
    with engine.connect() as conn:
        assert ("daily", "k2", 3, 1) in _active(conn)
    # The active run ends: the partition is free for a new run.
    _at(engine, "UPDATE runs SET status = 'success' WHERE id = 2")
    with engine.connect() as conn:
        assert ("daily", "k1") not in {a[:2] for a in _active(conn)}
    again = _insert_run(engine, 3, "k1", "queued")
    with engine.connect() as conn:
        assert ("daily", "k1", again, 3) in _active(conn)
    # A finished run queued again (inactive to active) while another is active: refused.
    with pytest.raises(IntegrityError, match=TAKEN):
        _at(engine, "UPDATE runs SET status = 'queued' WHERE id = 2")
    _at(engine, "UPDATE runs SET status = 'failed' WHERE id = 4")  # inactive to inactive
    # An active run deleted frees its partition; a finished one deleted changes nothing.
    _at(engine, "DELETE FROM runs WHERE id IN (3, 1)")
    with engine.connect() as conn:
        assert ("daily", "k2") not in {a[:2] for a in _active(conn)}
        assert len(_active(conn)) == 3
    _at(engine, "UPDATE runs SET status = 'queued' WHERE id = 7")  # no other active: taken
    with engine.connect() as conn:
        assert _active(conn) == {
            ("daily", "k1", again, 3),
            ("daily", "k3", 5, 2),
            ("daily", "k4", 6, FAR),
            ("weekly", "k4", 7, FAR),
        }
    # Runs of one statement: each row its own place, the statement refused as a whole.
    with pytest.raises(IntegrityError, match=TAKEN):
        _at(engine, "UPDATE runs SET status = 'queued' WHERE job_name = 'daily'")
    _at(engine, "UPDATE runs SET status = 'canceled' WHERE status IN ('queued', 'running')")
    with engine.connect() as conn:
        assert _active(conn) == set()


def _bounds(conn: Connection, table: str) -> list[tuple[str, str]]:
    rows = conn.execute(
        text(
            "SELECT c.relname, pg_get_expr(c.relpartbound, c.oid) FROM pg_inherits i "
            "JOIN pg_class c ON c.oid = i.inhrelid WHERE i.inhparent = to_regclass(:t) "
            "ORDER BY 1"
        ),
        {"t": table},
    )
    return [(str(name)[len(table) :], str(bound)) for name, bound in rows]


def _where(conn: Connection, table: str) -> dict[int, str]:
    rows = conn.execute(text(f"SELECT id, tableoid::regclass::text FROM {table}"))
    return {int(i): str(name) for i, name in rows}


@pytest.mark.skipif(
    not os.environ.get("BACKFILLER_TEST_DATABASE_URL"), reason="PostgreSQL only (partitions)"
)
def test_0050_partitions_runs_and_slots_as_the_history_and_later_ranges_keep_the_rule(
    engine: Engine, fresh_url: str
) -> None:
    upgrade_database(fresh_url, "0050")
    with engine.connect() as conn:
        history = _bounds(conn, "run_logs")
        assert history == [
            ("_b0", "FOR VALUES FROM ('0') TO ('1')"),
            ("_b1", "FOR VALUES FROM ('1') TO ('1001')"),
            ("_default", "DEFAULT"),
        ]
        kinds = conn.execute(
            text("SELECT relkind FROM pg_class WHERE relname IN ('runs', 'slots')")
        ).scalars()
        assert list(kinds) == ["p", "p"]
        assert _bounds(conn, "runs") == history
        assert _bounds(conn, "slots") == history
        assert set(_where(conn, "runs").values()) == {"runs_b1", "runs_default"}
        assert _where(conn, "runs")[6] == "runs_default"
        assert _where(conn, "slots")[5] == "slots_default"
        for table, fill in (("runs", 80), ("slots", 90)):
            options = conn.execute(
                text("SELECT reloptions FROM pg_class WHERE relname = :p"),
                {"p": f"{table}_b1"},
            ).scalar_one()
            assert f"fillfactor={fill}" in options
            assert "autovacuum_vacuum_insert_scale_factor=0.02" in options
            sequence = conn.execute(
                text("SELECT pg_get_serial_sequence(:t, 'id')"), {"t": table}
            ).scalar_one()
            assert sequence == f"public.{table}_id_seq"
        # Ids go on from the sequence.
        row = _run(conn, 2, 99, "k9", "success", attempt=1)
        assert row == 8
        assert _where(conn, "runs")[row] == "runs_b1"
        conn.commit()
        # A range attached after the migration: its partition has the triggers too.
        conn.execute(text("CREATE TABLE runs_b1001 (LIKE runs INCLUDING DEFAULTS)"))
        conn.execute(
            text("ALTER TABLE runs ATTACH PARTITION runs_b1001 FOR VALUES FROM (1001) TO (1500)")
        )
        conn.commit()
        cloned = conn.execute(
            text(
                "SELECT tgname FROM pg_trigger WHERE tgrelid = 'runs_b1001'::regclass "
                "ORDER BY tgname"
            )
        ).scalars()
        assert list(cloned) == [
            "runs_active_deleted",
            "runs_active_ended",
            "runs_active_inserted",
            "runs_active_started",
        ]
    later = _insert_run(engine, 1200, "k5", "running")
    with engine.connect() as conn:
        assert _where(conn, "runs")[later] == "runs_b1001"
        assert ("daily", "k5", later, 1200) in _active(conn)
    with pytest.raises(IntegrityError, match=TAKEN):
        _insert_run(engine, 1300, "k5", "queued")
    with pytest.raises(IntegrityError, match=TAKEN):
        _insert_run(engine, 1300, "k1", "queued")  # run 2's partition, in another range
    _at(engine, "UPDATE runs SET status = 'failed' WHERE id = :id", id=later)
    _insert_run(engine, 1300, "k5", "queued")
    _at(engine, "DELETE FROM runs WHERE backfill_id = 1300")
    with engine.connect() as conn:
        assert ("daily", "k5") not in {a[:2] for a in _active(conn)}


def _schema(conn: Connection) -> dict[str, Any]:
    """What ``runs`` and ``slots`` are made of, as the database says."""
    found = inspect(conn)
    out: dict[str, Any] = {}
    for table in ("runs", "slots"):
        out[table] = {
            "columns": [
                (c["name"], str(c["type"]), c["nullable"], c.get("default"))
                for c in found.get_columns(table)
            ],
            "pk": found.get_pk_constraint(table),
            "fks": sorted(
                (f["name"], tuple(f["constrained_columns"]), f["referred_table"], str(f["options"]))
                for f in found.get_foreign_keys(table)
            ),
            "uniques": sorted(
                (u["name"], tuple(u["column_names"])) for u in found.get_unique_constraints(table)
            ),
            "indexes": sorted(
                (
                    i["name"],
                    tuple(str(c) for c in i["column_names"]),
                    i["unique"],
                    str(sorted((k, str(v)) for k, v in i.get("dialect_options", {}).items())),
                )
                for i in found.get_indexes(table)
            ),
        }
        if conn.dialect.name == "postgresql":
            out[table]["kind"] = conn.execute(
                text("SELECT relkind, reloptions FROM pg_class WHERE relname = :t"), {"t": table}
            ).one()
    out["tables"] = sorted(found.get_table_names())
    return out


def test_0050_goes_back_to_0049s_schema_with_the_rows_and_up_again(
    engine: Engine, fresh_url: str
) -> None:
    with engine.connect() as conn:
        before, runs, slots = _schema(conn), _rows(conn, "runs"), _rows(conn, "slots")
    upgrade_database(fresh_url, "0050")
    # Rows with no backfill (or a run with no slot): 0049's keys would refuse them.
    _insert_run(engine, 1200, "k7", "success")
    with engine.begin() as conn:
        _slot(conn, 1300, "k8", 0)
        _run(conn, 2, 12345, "k9", "success", attempt=3)
    command.downgrade(alembic_config(fresh_url), "0049")
    with engine.connect() as conn:
        assert _schema(conn) == before
        assert _rows(conn, "runs") == runs
        assert _rows(conn, "slots") == slots
    # The unique index is back (a run of an existing slot: no foreign key refuses it).
    with pytest.raises(IntegrityError, match=r"uq_runs_active_partition|runs\.job_name"):
        _insert_run(engine, 2, "k1", "queued", slot=3)
    upgrade_database(fresh_url, "0050")
    with engine.connect() as conn:
        assert _rows(conn, "runs") == runs
        assert len(_active(conn)) == 4
    with pytest.raises(IntegrityError, match=TAKEN):
        _insert_run(engine, 2, "k1", "queued")
