"""initial schema

Revision ID: 0001
Revises:
Create Date: 2026-11-30 13:46:40.904292
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0001"
down_revision: str | None = None
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:

    op.create_table(
        "backfills",
        sa.Column(
            "id",
            sa.BigInteger().with_variant(sa.Integer(), "sqlite"),
            autoincrement=True,
            nullable=False,
        ),
        sa.Column("job_name", sa.String(length=200), nullable=False),
        sa.Column(
            "selection_kind",
            sa.Enum("range", "keys", "all", name="selectionkind", native_enum=False, length=32),
            nullable=False,
        ),
        sa.Column("range_start", sa.String(length=200), nullable=True),
        sa.Column("range_end", sa.String(length=200), nullable=True),
        sa.Column("keys", sa.JSON(), nullable=True),
        sa.Column("partitions_fingerprint", sa.String(length=64), nullable=False),
        sa.Column("first_index", sa.BigInteger(), nullable=False),
        sa.Column(
            "reprocess",
            sa.Enum(
                "missing",
                "failed_and_missing",
                "all",
                name="reprocess",
                native_enum=False,
                length=32,
            ),
            nullable=False,
        ),
        sa.Column(
            "order",
            sa.Enum("oldest_first", "newest_first", name="order", native_enum=False, length=32),
            nullable=False,
        ),
        sa.Column("max_concurrent_runs", sa.Integer(), nullable=True),
        sa.Column("run_config", sa.JSON(), nullable=True),
        sa.Column("tags", sa.JSON(), nullable=False),
        sa.Column("title", sa.Text(), nullable=True),
        sa.Column("description", sa.Text(), nullable=True),
        sa.Column("idempotency_key", sa.String(length=200), nullable=True),
        sa.Column("request_fingerprint", sa.String(length=64), nullable=False),
        sa.Column(
            "status",
            sa.Enum(
                "requested",
                "running",
                "paused",
                "canceling",
                "canceled",
                "completed_success",
                "completed_failed",
                "failed",
                name="backfillstate",
                native_enum=False,
                length=32,
            ),
            nullable=False,
        ),
        sa.Column("error", sa.Text(), nullable=True),
        sa.Column("creator", sa.String(length=200), nullable=True),
        sa.Column("parent_id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("started_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("ended_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("planned", sa.BigInteger(), nullable=False),
        sa.Column("total", sa.BigInteger(), nullable=False),
        sa.Column("pending", sa.BigInteger(), nullable=False),
        sa.Column("queued", sa.BigInteger(), nullable=False),
        sa.Column("running", sa.BigInteger(), nullable=False),
        sa.Column("succeeded", sa.BigInteger(), nullable=False),
        sa.Column("failed", sa.BigInteger(), nullable=False),
        sa.Column("canceled", sa.BigInteger(), nullable=False),
        sa.Column("skipped", sa.BigInteger(), nullable=False),
        sa.Column("version", sa.BigInteger(), nullable=False),
        sa.ForeignKeyConstraint(
            ["parent_id"], ["backfills.id"], name=op.f("fk_backfills_parent_id_backfills")
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_backfills")),
        sa.UniqueConstraint("idempotency_key", name=op.f("uq_backfills_idempotency_key")),
    )
    with op.batch_alter_table("backfills", schema=None) as batch_op:
        batch_op.create_index("ix_backfills_job_name_id", ["job_name", "id"], unique=False)
        batch_op.create_index("ix_backfills_parent_id", ["parent_id"], unique=False)
        batch_op.create_index("ix_backfills_status_id", ["status", "id"], unique=False)

    op.create_table(
        "daemon_leases",
        sa.Column("owner", sa.String(length=200), nullable=False),
        sa.Column("heartbeat_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("started_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("owner", name=op.f("pk_daemon_leases")),
    )
    op.create_table(
        "dynamic_partitions",
        sa.Column(
            "id",
            sa.BigInteger().with_variant(sa.Integer(), "sqlite"),
            autoincrement=True,
            nullable=False,
        ),
        sa.Column("name", sa.String(length=200), nullable=False),
        sa.Column("key", sa.String(length=200), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_dynamic_partitions")),
        sa.UniqueConstraint("name", "key", name=op.f("uq_dynamic_partitions_name_key")),
    )
    with op.batch_alter_table("dynamic_partitions", schema=None) as batch_op:
        batch_op.create_index("ix_dynamic_partitions_name_id", ["name", "id"], unique=False)

    op.create_table(
        "partition_states",
        sa.Column("job_name", sa.String(length=200), nullable=False),
        sa.Column("partition_key", sa.String(length=200), nullable=False),
        sa.Column(
            "status",
            sa.Enum(
                "queued",
                "running",
                "success",
                "failed",
                "canceled",
                name="runstate",
                native_enum=False,
                length=32,
            ),
            nullable=False,
        ),
        sa.Column("run_id", sa.BigInteger(), nullable=True),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("job_name", "partition_key", name=op.f("pk_partition_states")),
    )
    op.create_table(
        "backfill_events",
        sa.Column(
            "id",
            sa.BigInteger().with_variant(sa.Integer(), "sqlite"),
            autoincrement=True,
            nullable=False,
        ),
        sa.Column(
            "backfill_id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False
        ),
        sa.Column("kind", sa.String(length=32), nullable=False),
        sa.Column("at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("actor", sa.String(length=200), nullable=True),
        sa.Column("message", sa.Text(), nullable=True),
        sa.ForeignKeyConstraint(
            ["backfill_id"],
            ["backfills.id"],
            name=op.f("fk_backfill_events_backfill_id_backfills"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_backfill_events")),
    )
    with op.batch_alter_table("backfill_events", schema=None) as batch_op:
        batch_op.create_index(
            "ix_backfill_events_backfill_id_id", ["backfill_id", "id"], unique=False
        )

    op.create_table(
        "backfill_tags",
        sa.Column(
            "backfill_id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False
        ),
        sa.Column("key", sa.String(length=200), nullable=False),
        sa.Column("value", sa.String(length=1000), nullable=False),
        sa.ForeignKeyConstraint(
            ["backfill_id"],
            ["backfills.id"],
            name=op.f("fk_backfill_tags_backfill_id_backfills"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("backfill_id", "key", name=op.f("pk_backfill_tags")),
    )
    with op.batch_alter_table("backfill_tags", schema=None) as batch_op:
        batch_op.create_index("ix_backfill_tags_key_value", ["key", "value"], unique=False)

    op.create_table(
        "slots",
        sa.Column(
            "id",
            sa.BigInteger().with_variant(sa.Integer(), "sqlite"),
            autoincrement=True,
            nullable=False,
        ),
        sa.Column(
            "backfill_id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False
        ),
        sa.Column("position", sa.BigInteger(), nullable=False),
        sa.Column("partition_key", sa.String(length=200), nullable=False),
        sa.Column(
            "status",
            sa.Enum(
                "pending",
                "queued",
                "running",
                "succeeded",
                "failed",
                "canceled",
                "skipped",
                name="slotstate",
                native_enum=False,
                length=32,
            ),
            nullable=False,
        ),
        sa.Column("attempts", sa.Integer(), nullable=False),
        sa.Column("skip_reason", sa.String(length=64), nullable=True),
        sa.Column("next_attempt_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["backfill_id"],
            ["backfills.id"],
            name=op.f("fk_slots_backfill_id_backfills"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_slots")),
        sa.UniqueConstraint(
            "backfill_id", "partition_key", name=op.f("uq_slots_backfill_id_partition_key")
        ),
        sa.UniqueConstraint("backfill_id", "position", name=op.f("uq_slots_backfill_id_position")),
    )
    with op.batch_alter_table("slots", schema=None) as batch_op:
        batch_op.create_index(
            "ix_slots_backfill_id_status_position",
            ["backfill_id", "status", "position"],
            unique=False,
        )

    op.create_table(
        "runs",
        sa.Column(
            "id",
            sa.BigInteger().with_variant(sa.Integer(), "sqlite"),
            autoincrement=True,
            nullable=False,
        ),
        sa.Column(
            "backfill_id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False
        ),
        sa.Column("slot_id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False),
        sa.Column("job_name", sa.String(length=200), nullable=False),
        sa.Column("partition_key", sa.String(length=200), nullable=False),
        sa.Column("attempt", sa.Integer(), nullable=False),
        sa.Column(
            "status",
            sa.Enum(
                "queued",
                "running",
                "success",
                "failed",
                "canceled",
                name="runstate",
                native_enum=False,
                length=32,
            ),
            nullable=False,
        ),
        sa.Column(
            "failure_reason",
            sa.Enum(
                "error",
                "timeout",
                "worker_lost",
                name="failurereason",
                native_enum=False,
                length=32,
            ),
            nullable=True,
        ),
        sa.Column("error_message", sa.Text(), nullable=True),
        sa.Column("error_traceback", sa.Text(), nullable=True),
        sa.Column("queued_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("started_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("ended_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("lease_owner", sa.String(length=200), nullable=True),
        sa.Column("heartbeat_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("worker", sa.String(length=200), nullable=True),
        sa.ForeignKeyConstraint(
            ["backfill_id"],
            ["backfills.id"],
            name=op.f("fk_runs_backfill_id_backfills"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["slot_id"], ["slots.id"], name=op.f("fk_runs_slot_id_slots"), ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_runs")),
        sa.UniqueConstraint("slot_id", "attempt", name=op.f("uq_runs_slot_id_attempt")),
    )
    with op.batch_alter_table("runs", schema=None) as batch_op:
        batch_op.create_index("ix_runs_backfill_id_id", ["backfill_id", "id"], unique=False)
        batch_op.create_index("ix_runs_status_id", ["status", "id"], unique=False)
        batch_op.create_index(
            "uq_runs_active_partition",
            ["job_name", "partition_key"],
            unique=True,
            sqlite_where=sa.text("status IN ('queued', 'running')"),
            postgresql_where=sa.text("status IN ('queued', 'running')"),
        )

    op.create_table(
        "run_logs",
        sa.Column(
            "id",
            sa.BigInteger().with_variant(sa.Integer(), "sqlite"),
            autoincrement=True,
            nullable=False,
        ),
        sa.Column("run_id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False),
        sa.Column("at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("level", sa.String(length=16), nullable=False),
        sa.Column("message", sa.Text(), nullable=False),
        sa.ForeignKeyConstraint(
            ["run_id"], ["runs.id"], name=op.f("fk_run_logs_run_id_runs"), ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_run_logs")),
    )
    with op.batch_alter_table("run_logs", schema=None) as batch_op:
        batch_op.create_index("ix_run_logs_run_id_id", ["run_id", "id"], unique=False)


def downgrade() -> None:

    with op.batch_alter_table("run_logs", schema=None) as batch_op:
        batch_op.drop_index("ix_run_logs_run_id_id")

    op.drop_table("run_logs")
    with op.batch_alter_table("runs", schema=None) as batch_op:
        batch_op.drop_index(
            "uq_runs_active_partition",
            sqlite_where=sa.text("status IN ('queued', 'running')"),
            postgresql_where=sa.text("status IN ('queued', 'running')"),
        )
        batch_op.drop_index("ix_runs_status_id")
        batch_op.drop_index("ix_runs_backfill_id_id")

    op.drop_table("runs")
    with op.batch_alter_table("slots", schema=None) as batch_op:
        batch_op.drop_index("ix_slots_backfill_id_status_position")

    op.drop_table("slots")
    with op.batch_alter_table("backfill_tags", schema=None) as batch_op:
        batch_op.drop_index("ix_backfill_tags_key_value")

    op.drop_table("backfill_tags")
    with op.batch_alter_table("backfill_events", schema=None) as batch_op:
        batch_op.drop_index("ix_backfill_events_backfill_id_id")

    op.drop_table("backfill_events")
    op.drop_table("partition_states")
    with op.batch_alter_table("dynamic_partitions", schema=None) as batch_op:
        batch_op.drop_index("ix_dynamic_partitions_name_id")

    op.drop_table("dynamic_partitions")
    op.drop_table("daemon_leases")
    with op.batch_alter_table("backfills", schema=None) as batch_op:
        batch_op.drop_index("ix_backfills_status_id")
        batch_op.drop_index("ix_backfills_parent_id")
        batch_op.drop_index("ix_backfills_job_name_id")

    op.drop_table("backfills")
