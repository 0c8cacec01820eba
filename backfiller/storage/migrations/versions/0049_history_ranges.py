"""history ranges: run log lines and backfill events partitioned by backfill id (PostgreSQL)

Revision ID: 0049
Revises: 0048

``run_logs`` gets ``backfill_id`` (its run's), and neither it nor ``backfill_events`` names its
run or backfill by a foreign key any longer: on PostgreSQL both become partitioned by
``RANGE (backfill_id)`` (``storage.history_partitions``), and a range's rows are dropped with
its partitions once all its backfills have expired, after the runs and backfills themselves
are gone. SQLite keeps plain tables (the column is added and filled, the keys dropped).

On PostgreSQL the rows there are become the first range, ``[0, next backfill id)``; a second
range is made ahead, and a ``DEFAULT`` partition catches ids beyond the ranges made. The log
lines are copied once (with their run's backfill), the events are not: their table becomes the
first range's partition as it is. The tables are locked for the whole migration; see
docs/deploy.md for how long it takes per million runs.
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0049"
down_revision: str | None = "0048"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

AHEAD = 1000
"""Backfill ids the range made ahead covers (``history_partitions.MIN_SPAN`` then)."""
SETTINGS = (
    "autovacuum_vacuum_insert_scale_factor = 0.02, autovacuum_vacuum_insert_threshold = 10000, "
    "autovacuum_analyze_scale_factor = 0.02, autovacuum_analyze_threshold = 10000"
)
"""0015's settings of the two tables, now each partition's (a partitioned table has none)."""

_LOGS_FK = ("fk_run_logs_run_id_runs", "runs", ["run_id"], ["id"])
_EVENTS_FK = ("fk_backfill_events_backfill_id_backfills", "backfills", ["backfill_id"], ["id"])


def upgrade() -> None:
    if op.get_bind().dialect.name == "postgresql":
        _partition()
        return
    with op.batch_alter_table("run_logs") as batch:
        batch.add_column(sa.Column("backfill_id", sa.Integer(), nullable=True))
        batch.drop_constraint(_LOGS_FK[0], type_="foreignkey")
    op.execute(
        "UPDATE run_logs SET backfill_id = "
        "(SELECT runs.backfill_id FROM runs WHERE runs.id = run_logs.run_id)"
    )
    with op.batch_alter_table("run_logs") as batch:
        batch.alter_column("backfill_id", existing_type=sa.Integer(), nullable=False)
    with op.batch_alter_table("backfill_events") as batch:
        batch.drop_constraint(_EVENTS_FK[0], type_="foreignkey")


def _partition() -> None:
    last, called = (
        op.get_bind().execute(sa.text("SELECT last_value, is_called FROM backfills_id_seq")).one()
    )
    first = (int(last) if called else int(last) - 1) + 1  # the first id not handed out
    op.execute("ALTER TABLE run_logs RENAME TO run_logs_old")
    op.execute("ALTER TABLE run_logs_old RENAME CONSTRAINT pk_run_logs TO pk_run_logs_old")
    op.execute("ALTER INDEX ix_run_logs_run_id_id RENAME TO ix_run_logs_old_run_id_id")
    op.execute(
        "CREATE TABLE run_logs (id bigint NOT NULL DEFAULT nextval('run_logs_id_seq'), "
        "run_id bigint NOT NULL, at timestamptz NOT NULL, level varchar(16) NOT NULL, "
        "message text NOT NULL, backfill_id bigint NOT NULL, "
        "CONSTRAINT pk_run_logs PRIMARY KEY (id, backfill_id)) PARTITION BY RANGE (backfill_id)"
    )
    op.execute("CREATE INDEX ix_run_logs_run_id_id ON run_logs (run_id, id)")
    op.execute("ALTER SEQUENCE run_logs_id_seq OWNED BY run_logs.id")
    op.execute("CREATE TABLE run_logs_b0 (LIKE run_logs INCLUDING DEFAULTS)")
    op.execute(
        "INSERT INTO run_logs_b0 (id, run_id, at, level, message, backfill_id) "
        "SELECT l.id, l.run_id, l.at, l.level, l.message, r.backfill_id "
        "FROM run_logs_old l JOIN runs r ON r.id = l.run_id"
    )
    op.execute("DROP TABLE run_logs_old")

    op.execute("ALTER TABLE backfill_events RENAME TO backfill_events_b0")
    op.execute(f"ALTER TABLE backfill_events_b0 DROP CONSTRAINT {_EVENTS_FK[0]}")
    op.execute("ALTER TABLE backfill_events_b0 DROP CONSTRAINT pk_backfill_events")
    op.execute(
        "ALTER INDEX ix_backfill_events_backfill_id_id "
        "RENAME TO backfill_events_b0_backfill_id_id_idx"
    )
    op.execute(
        "CREATE TABLE backfill_events (id bigint NOT NULL "
        "DEFAULT nextval('backfill_events_id_seq'), backfill_id bigint NOT NULL, "
        "kind varchar(32) NOT NULL, at timestamptz NOT NULL, actor varchar(200), message text, "
        "CONSTRAINT pk_backfill_events PRIMARY KEY (id, backfill_id)) "
        "PARTITION BY RANGE (backfill_id)"
    )
    op.execute(
        "CREATE INDEX ix_backfill_events_backfill_id_id ON backfill_events (backfill_id, id)"
    )
    op.execute("ALTER SEQUENCE backfill_events_id_seq OWNED BY backfill_events.id")

    for table in ("run_logs", "backfill_events"):
        op.execute(f"ALTER TABLE {table}_b0 SET ({SETTINGS})")
        op.execute(
            f"ALTER TABLE {table} ATTACH PARTITION {table}_b0 FOR VALUES FROM (0) TO ({first})"
        )
        ahead = f"{table}_b{first}"
        op.execute(f"CREATE TABLE {ahead} (LIKE {table} INCLUDING DEFAULTS)")
        op.execute(f"ALTER TABLE {ahead} SET ({SETTINGS})")
        op.execute(
            f"ALTER TABLE {table} ATTACH PARTITION {ahead} "
            f"FOR VALUES FROM ({first}) TO ({first + AHEAD})"
        )
        op.execute(f"CREATE TABLE {table}_default PARTITION OF {table} DEFAULT")
        op.execute(f"ALTER TABLE {table}_default SET ({SETTINGS})")


def downgrade() -> None:
    if op.get_bind().dialect.name == "postgresql":
        _unpartition()
        return
    op.execute("DELETE FROM run_logs WHERE run_id NOT IN (SELECT id FROM runs)")
    op.execute("DELETE FROM backfill_events WHERE backfill_id NOT IN (SELECT id FROM backfills)")
    with op.batch_alter_table("run_logs") as batch:
        batch.drop_column("backfill_id")
        batch.create_foreign_key(*_LOGS_FK, ondelete="CASCADE")
    with op.batch_alter_table("backfill_events") as batch:
        batch.create_foreign_key(*_EVENTS_FK, ondelete="CASCADE")


def _unpartition() -> None:
    """Plain tables again, with the rows whose run or backfill is still there."""
    for table, key, fk in (
        ("run_logs", "run_id", _LOGS_FK),
        ("backfill_events", "backfill_id", _EVENTS_FK),
    ):
        op.execute(f"CREATE TABLE {table}_plain (LIKE {table} INCLUDING DEFAULTS)")
        op.execute(
            f"INSERT INTO {table}_plain SELECT * FROM {table} "
            f"WHERE {key} IN (SELECT id FROM {fk[1]})"
        )
        op.execute(f"ALTER SEQUENCE {table}_id_seq OWNED BY {table}_plain.id")
        op.execute(f"DROP TABLE {table}")
        op.execute(f"ALTER TABLE {table}_plain RENAME TO {table}")
        op.execute(f"ALTER TABLE {table} ADD CONSTRAINT pk_{table} PRIMARY KEY (id)")
        op.create_foreign_key(fk[0], table, fk[1], fk[2], fk[3], ondelete="CASCADE")
        op.execute(f"ALTER TABLE {table} SET ({SETTINGS})")
    op.execute("ALTER TABLE run_logs DROP COLUMN backfill_id")
    op.execute("CREATE INDEX ix_run_logs_run_id_id ON run_logs (run_id, id)")
    op.execute(
        "CREATE INDEX ix_backfill_events_backfill_id_id ON backfill_events (backfill_id, id)"
    )
