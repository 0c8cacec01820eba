"""How long migration 0049 takes to partition an existing history on PostgreSQL.

A database of its own gets a history in the daemon's row shapes (``bench/history_rows.py``:
``--runs`` runs, 3 log lines and about 2 events a run... as a deployment has them), is taken
back to revision 0048 (plain tables: the rows as a database of the release before has them),
then ``backfiller db upgrade`` converts it, timed: the seconds it took, and per million runs.
The tables are locked for the whole conversion (docs/deploy.md). Prints figures; asserts
nothing. Run with ``python -m bench.history_convert``; the database is dropped at the end.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
import uuid

from alembic import command
from sqlalchemy import create_engine, text
from sqlalchemy.engine import make_url

from backfiller.storage.migrations import alembic_config, upgrade_database
from bench.history_rows import HistoryShape, build_history

DEFAULT_URL = "postgresql+psycopg://postgres@127.0.0.1:5432/test"


def convert(base: str, runs: int) -> None:
    server = make_url(base).set(drivername="postgresql+psycopg")
    name = f"bf_convert_{uuid.uuid4().hex[:10]}"
    admin = create_engine(server, isolation_level="AUTOCOMMIT")
    with admin.connect() as conn:
        conn.execute(text(f'CREATE DATABASE "{name}"'))
    url = server.set(database=name).render_as_string(hide_password=False)
    try:
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
        engine.dispose()
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
    finally:
        with admin.connect() as conn:
            conn.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
        admin.dispose()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--database",
        default=os.environ.get("BACKFILLER_BENCH_POSTGRES_URL", DEFAULT_URL),
        help="a PostgreSQL server (a database of its own is made there and dropped)",
    )
    parser.add_argument("--runs", type=int, default=1_000_000)
    args = parser.parse_args()
    convert(args.database, args.runs)


if __name__ == "__main__":
    main()
