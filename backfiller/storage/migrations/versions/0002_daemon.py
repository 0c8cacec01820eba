"""execution state of the daemon

Revision ID: 0002
Revises: 0001
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0002"
down_revision: str | None = "0001"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("slots") as batch:
        batch.add_column(
            sa.Column("free_attempts", sa.Integer(), nullable=False, server_default=sa.text("0"))
        )
    op.create_index("ix_runs_lease_owner_status", "runs", ["lease_owner", "status"])


def downgrade() -> None:
    op.drop_index("ix_runs_lease_owner_status", table_name="runs")
    with op.batch_alter_table("slots") as batch:
        batch.drop_column("free_attempts")
