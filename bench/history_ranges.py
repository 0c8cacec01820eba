"""Partitioned history on PostgreSQL: migrations 0049's and 0050's conversions, and a range
dropped whole against its log lines deleted row by row.

A database of its own gets a history in the daemon's row shapes (``bench/history_rows.py``:
``--runs`` runs of 100 jobs, 3 log lines a run), is taken back to revision 0048 (plain tables,
as a database of the release before has them), then converted a revision at a time, each in a
process of its own as ``backfiller db upgrade`` does it, timed: 0048 to 0049 (the log lines and
events partitioned), then 0049 to 0050 (runs and slots partitioned, ``active_runs`` filled);
the seconds, and per million runs (the tables are locked meanwhile: docs/deploy.md), the
process's start-up included and, in brackets, left out. ``VACUUM ANALYZE`` before each, as an
idle database would be. Then every backfill is made expired and, in the same database:

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
        try:
            with engine.begin() as conn:
                jobs = [(f"job_{i}", "none") for i in range(100)]
                build_history(conn, HistoryShape(runs=runs, jobs=jobs, log_lines=3))
            command.downgrade(alembic_config(url), "0048")
            lines, events = idle(engine, "run_logs", "backfill_events")
            print(f"{runs:,} runs, {lines:,} log lines, {events:,} events at revision 0048")
            took = timed_upgrade(url, "0048", "0049", runs)
            print(f"  per million log lines: {took / lines * 1e6:.1f} s")
            all_runs, slots = idle(engine, "runs", "slots")
            print(f"{all_runs:,} runs (retries included), {slots:,} slots at revision 0049")
            timed_upgrade(url, "0049", "0050", runs)
            drop_against_delete(engine, delete_seconds)
        finally:
            engine.dispose()


def idle(engine: Engine, *tables: str) -> list[int]:
    """``VACUUM ANALYZE`` (as an idle database would be), then the rows of ``tables``."""
    with engine.connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
        conn.execute(text("VACUUM ANALYZE"))
        return [conn.execute(text(f"SELECT count(*) FROM {t}")).scalar_one() for t in tables]


# ``backfiller db upgrade`` to one revision: the CLI takes the database to the newest.
_UPGRADE = """
import sys, time
import alembic.command
import backfiller.storage.metadata
from backfiller.storage.migrations import current_revision, upgrade_database
began = time.perf_counter()
upgrade_database(sys.argv[1], sys.argv[2])
print(f"{time.perf_counter() - began:.3f} database at revision {current_revision(sys.argv[1])}")
"""


def timed_upgrade(url: str, start: str, revision: str, runs: int) -> float:
    """Upgrade from ``start`` to ``revision`` in a process of its own, and print how long it
    took (per million runs too); the seconds, the process's start-up included."""
    began = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-c", _UPGRADE, url, revision],
        capture_output=True,
        text=True,
        check=False,
    )
    took = time.perf_counter() - began
    if done.returncode != 0:
        raise SystemExit(done.stderr.strip())
    migrating, said = done.stdout.strip().split(" ", 1)
    own = float(migrating)
    print(said)
    print(f"upgrade ({start} -> {revision}): {took:.1f} s ({own:.1f} s start-up left out)")
    print(f"  per million runs: {took / runs * 1e6:.1f} s ({own / runs * 1e6:.1f} s)")
    return took


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
        found = droppable(conn, datetime.now(UTC))
        if not found:
            print("no range to drop")
            return
        whole = found[0]
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
