"""Partitioned history on PostgreSQL: migration 0049's conversion, and a range dropped whole
against its log lines deleted row by row.

A database of its own gets a history in the daemon's row shapes (``bench/history_rows.py``:
``--runs`` runs of 100 jobs, 3 log lines a run), is taken back to revision 0048 (plain tables,
as a database of the release before has them), then ``backfiller db upgrade`` converts it,
timed: the seconds, and per million runs (the tables are locked meanwhile: docs/deploy.md).
Then every backfill is made expired and, in the same database:

1. log lines deleted as retention deleted them before 0049 (and still does outside a range):
   transactions of 1,000 lines by id, for ``--delete-seconds``: lines per second;
2. the range that holds the whole history dropped (``history_partitions.drop_range``, as
   retention does now): its lines and events, and the time it took.

Prints figures; asserts nothing. ``python -m bench.history_ranges``; the database is dropped at
the end.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from datetime import UTC, datetime

from alembic import command
from sqlalchemy import Engine, create_engine, text

from backfiller.storage.history_partitions import drop_range, droppable
from backfiller.storage.migrations import alembic_config, upgrade_database
from bench.databases import scratch_postgres
from bench.history_rows import HistoryShape, build_history

DEFAULT_URL = "postgresql+psycopg://postgres@127.0.0.1:5432/test"


def convert(base: str, runs: int, delete_seconds: float) -> None:
    with scratch_postgres(base, "bf_convert") as url:
        upgrade_database(url)
        engine = create_engine(url)
        with engine.begin() as conn:
            jobs = [(f"job_{i}", "none") for i in range(100)]
            build_history(conn, HistoryShape(runs=runs, jobs=jobs, log_lines=3))
        command.downgrade(alembic_config(url), "0048")
        with engine.connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
            conn.execute(text("VACUUM ANALYZE"))
            lines = conn.execute(text("SELECT count(*) FROM run_logs")).scalar_one()
            events = conn.execute(text("SELECT count(*) FROM backfill_events")).scalar_one()
        began = time.perf_counter()
        done = subprocess.run(
            [sys.executable, "-m", "backfiller", "db", "upgrade", "--database", url],
            capture_output=True,
            text=True,
            check=False,
        )
        took = time.perf_counter() - began
        print(done.stdout.strip() or done.stderr.strip())
        print(f"{runs:,} runs, {lines:,} log lines, {events:,} events at revision 0048")
        print(f"backfiller db upgrade (0048 -> 0049): {took:.1f} s")
        print(f"  per million runs: {took / runs * 1e6:.1f} s")
        print(f"  per million log lines: {took / lines * 1e6:.1f} s")
        try:
            drop_against_delete(engine, delete_seconds)
        finally:
            engine.dispose()


def drop_against_delete(engine: Engine, seconds: float) -> None:
    """Lines deleted a batch a transaction for ``seconds``, then the range dropped whole."""
    with engine.begin() as conn:
        conn.execute(
            text("UPDATE backfills SET status = 'completed_success', ended_at = :t"),
            {"t": datetime(2020, 1, 1, tzinfo=UTC)},
        )
    deleted, began = 0, time.perf_counter()
    while time.perf_counter() - began < seconds:
        with engine.begin() as conn:
            ids = (
                conn.execute(text("SELECT id FROM run_logs ORDER BY id LIMIT 1000")).scalars().all()
            )
            conn.execute(text("DELETE FROM run_logs WHERE id = ANY(:ids)"), {"ids": list(ids)})
            deleted += len(ids)
    took_deleting = time.perf_counter() - began
    print(f"log lines deleted by id, 1,000 a transaction: {deleted / took_deleting:,.0f} lines/s")
    with engine.begin() as conn:
        [whole] = droppable(conn, datetime.now(UTC))[:1] or [None]
        if whole is None:
            print("no range to drop")
            return
        began = time.perf_counter()
        gone = drop_range(conn, whole)
    took = time.perf_counter() - began
    assert gone is not None
    rows = sum(gone.rows.values())
    size = sum(gone.bytes.values()) / 2**20
    print(
        f"range {whole.low}-{whole.high - 1} dropped: {rows:,} rows ({size:,.0f} MB) in "
        f"{took * 1000:.0f} ms, commit included; at the rate above, deleting them by id would "
        f"take {rows / (deleted / took_deleting):,.0f} s"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--database",
        default=os.environ.get("BACKFILLER_BENCH_POSTGRES_URL", DEFAULT_URL),
        help="a PostgreSQL server (a database of its own is made there and dropped)",
    )
    parser.add_argument("--runs", type=int, default=1_000_000)
    parser.add_argument("--delete-seconds", type=float, default=10.0)
    args = parser.parse_args()
    convert(args.database, args.runs, args.delete_seconds)


if __name__ == "__main__":
    main()
