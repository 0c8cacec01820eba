"""triggers and their evaluations

Revision ID: 0003
Revises: 0002
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0003"
down_revision: str | None = "0002"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "trigger_states",
        sa.Column("name", sa.String(length=200), nullable=False),
        sa.Column("enabled", sa.Boolean(), nullable=False),
        sa.Column("cursor", sa.Text(), nullable=True),
        sa.Column("cursor_version", sa.Integer(), nullable=False),
        sa.Column("interval_seconds", sa.Float(), nullable=True),
        sa.Column("next_evaluation_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("last_evaluation_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("name", name=op.f("pk_trigger_states")),
    )
    op.create_table(
        "trigger_evaluations",
        sa.Column(
            "id",
            sa.BigInteger().with_variant(sa.Integer(), "sqlite"),
            autoincrement=True,
            nullable=False,
        ),
        sa.Column("trigger_name", sa.String(length=200), nullable=False),
        sa.Column(
            "outcome",
            sa.Enum(
                "launched",
                "skipped",
                "failed",
                name="triggeroutcome",
                native_enum=False,
                length=32,
            ),
            nullable=False,
        ),
        sa.Column("skip_reason", sa.Text(), nullable=True),
        sa.Column("error_message", sa.Text(), nullable=True),
        sa.Column("error_traceback", sa.Text(), nullable=True),
        sa.Column("started_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("evaluated_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("duration_seconds", sa.Float(), nullable=False),
        sa.Column("actor", sa.String(length=200), nullable=True),
        sa.Column("dry_run", sa.Boolean(), nullable=False),
        sa.Column("backfill_ids", sa.JSON(), nullable=False),
        sa.Column("requests", sa.JSON(), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_trigger_evaluations")),
    )
    op.create_index(
        "ix_trigger_evaluations_trigger_name_id",
        "trigger_evaluations",
        ["trigger_name", "id"],
        unique=False,
    )


def downgrade() -> None:
    op.drop_index("ix_trigger_evaluations_trigger_name_id", table_name="trigger_evaluations")
    op.drop_table("trigger_evaluations")
    op.drop_table("trigger_states")
