"""history reads: an index for every read the API makes, and each trigger's newest evaluation

Revision ID: 0013
Revises: 0032

(The tags index ``(key, value, backfill_id)`` is 0031's.)

On PostgreSQL the indexes are built ``CONCURRENTLY`` (outside a transaction): the daemons and
the API keep writing while they build.
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0013"
down_revision: str | None = "0032"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

# (name, table, columns): the indexes this revision adds.
_INDEXES = (
    ("ix_runs_backfill_id_status_id", "runs", ("backfill_id", "status", "id")),
    ("ix_runs_partition_key_job_name_id", "runs", ("partition_key", "job_name", "id")),
    ("ix_runs_job_name_id", "runs", ("job_name", "id")),
    ("ix_audit_log_actor_id", "audit_log", ("actor", "id")),
    ("ix_audit_log_operation_id", "audit_log", ("operation", "id")),
)


def upgrade() -> None:
    op.create_table(
        "trigger_latest_evaluations",
        sa.Column("trigger_name", sa.String(length=200), nullable=False),
        sa.Column("evaluation_id", sa.BigInteger(), nullable=False),
        sa.PrimaryKeyConstraint("trigger_name", name=op.f("pk_trigger_latest_evaluations")),
    )
    op.execute(
        "INSERT INTO trigger_latest_evaluations (trigger_name, evaluation_id) "
        "SELECT trigger_name, MAX(id) FROM trigger_evaluations GROUP BY trigger_name"
    )
    if op.get_bind().dialect.name == "postgresql":
        # Keys in code-point order, as SQLite and Python sort them (rebuilds the table).
        op.execute(
            'ALTER TABLE partition_states ALTER COLUMN partition_key TYPE VARCHAR(200) COLLATE "C"'
        )
        with op.get_context().autocommit_block():
            for name, table, columns in _INDEXES:
                op.create_index(
                    name, table, list(columns), postgresql_concurrently=True, if_not_exists=True
                )
        return
    for name, table, columns in _INDEXES:
        op.create_index(name, table, list(columns))


def downgrade() -> None:
    if op.get_bind().dialect.name == "postgresql":
        op.execute(
            "ALTER TABLE partition_states ALTER COLUMN partition_key TYPE VARCHAR(200) "
            "COLLATE pg_catalog.default"
        )
    for name, table, _columns in reversed(_INDEXES):
        op.drop_index(name, table_name=table)
    op.drop_table("trigger_latest_evaluations")
