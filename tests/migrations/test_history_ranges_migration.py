"""Migration 0049 on a database with history: log lines get their run's backfill and, on
PostgreSQL, the two tables become partitioned with the rows there as the first range; and
back."""

from __future__ import annotations

from datetime import UTC, datetime

from alembic import command
from sqlalchemy import Connection, create_engine, insert, text

from backfiller.storage.history_partitions import ranges
from backfiller.storage.launches import _backfill_values
from backfiller.storage.migrations import alembic_config, upgrade_database
from backfiller.storage.records import (
    BackfillEventRecord,
    BackfillRecord,
    RunRecord,
    SlotRecord,
    table_of,
)
from tests.support import new_backfill

NOW = datetime(2026, 1, 5, tzinfo=UTC)


def _history(conn: Connection) -> None:
    """Two backfills with a run each, two log lines a run and an event a backfill, as 0048
    keeps them."""
    for n in (1, 2):
        values = _backfill_values(new_backfill(job_name="daily_sales", key=f"k{n}"), NOW)
        conn.execute(insert(table_of(BackfillRecord)).values(values))
        slot = conn.execute(
            insert(table_of(SlotRecord))
            .values(
                backfill_id=n,
                position=0,
                partition_key="2024-01-01",
                status="succeeded",
                attempts=1,
                free_attempts=0,
                lost_attempts=0,
                updated_at=NOW,
            )
            .returning(table_of(SlotRecord).c.id)
        ).scalar_one()
        run = conn.execute(
            insert(table_of(RunRecord))
            .values(
                backfill_id=n,
                slot_id=slot,
                job_name=f"job{n}",
                partition_key="2024-01-01",
                attempt=1,
                status="success",
                queued_at=NOW,
                partition_count=1,
            )
            .returning(table_of(RunRecord).c.id)
        ).scalar_one()
        for line in ("one", "two"):
            conn.execute(
                text(
                    "INSERT INTO run_logs (run_id, at, level, message) VALUES (:r, :at, 'INFO', :m)"
                ),
                {"r": run, "at": NOW, "m": f"{n} {line}"},
            )
        conn.execute(
            insert(table_of(BackfillEventRecord)).values(backfill_id=n, kind="launched", at=NOW)
        )


def test_0049_gives_log_lines_their_backfill_and_makes_the_first_range(fresh_url: str) -> None:
    upgrade_database(fresh_url, "0048")
    engine = create_engine(fresh_url)
    try:
        with engine.begin() as conn:
            _history(conn)
        upgrade_database(fresh_url, "0049")
        with engine.connect() as conn:
            lines = conn.execute(
                text("SELECT backfill_id, message FROM run_logs ORDER BY id")
            ).all()
            assert [tuple(r) for r in lines] == [
                (1, "1 one"),
                (1, "1 two"),
                (2, "2 one"),
                (2, "2 two"),
            ]
            if conn.dialect.name == "postgresql":
                made = ranges(conn)
                assert [(r.low, r.high) for r in made] == [(0, 3), (3, 1003)]
                where = (
                    conn.execute(
                        text("SELECT DISTINCT tableoid::regclass::text FROM backfill_events")
                    )
                    .scalars()
                    .all()
                )
                assert where == ["backfill_events_b0"]
            # New rows go on from the same ids.
            conn.execute(
                text(
                    "INSERT INTO run_logs (run_id, backfill_id, at, level, message) "
                    "VALUES (1, 1, :at, 'INFO', 'later')"
                ),
                {"at": NOW},
            )
            assert conn.execute(text("SELECT max(id) FROM run_logs")).scalar_one() == 5
            conn.commit()
        command.downgrade(alembic_config(fresh_url), "0048")
        with engine.connect() as conn:
            messages = conn.execute(text("SELECT message FROM run_logs ORDER BY id")).scalars()
            assert list(messages) == ["1 one", "1 two", "2 one", "2 two", "later"]
            assert conn.execute(text("SELECT count(*) FROM backfill_events")).scalar_one() == 2
    finally:
        engine.dispose()
