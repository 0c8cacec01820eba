"""teams and priority: a backfill acts for a team at a priority; tokens belong to a team;
per-team limits on concurrent runs

Revision ID: 0047
Revises: 0046
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0047"
down_revision: str | None = "0046"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    # Backfills launched before act for no team at the default priority.
    with op.batch_alter_table("backfills") as batch:
        batch.add_column(sa.Column("team", sa.String(length=200), nullable=True))
        batch.add_column(
            sa.Column("priority", sa.Integer(), nullable=False, server_default=sa.text("0"))
        )
        batch.create_index("ix_backfills_team_id", ["team", "id"])
    with op.batch_alter_table("api_tokens") as batch:
        batch.add_column(sa.Column("team", sa.String(length=200), nullable=True))
    op.create_table(
        "team_limits",
        sa.Column("team", sa.String(length=200), nullable=False),
        sa.Column("max_concurrent_runs", sa.Integer(), nullable=True),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("updated_by", sa.String(length=200), nullable=True),
        sa.PrimaryKeyConstraint("team", name=op.f("pk_team_limits")),
    )


def downgrade() -> None:
    op.drop_table("team_limits")
    with op.batch_alter_table("api_tokens") as batch:
        batch.drop_column("team")
    with op.batch_alter_table("backfills") as batch:
        batch.drop_index("ix_backfills_team_id")
        batch.drop_column("priority")
        batch.drop_column("team")
