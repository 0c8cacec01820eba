"""ranged runs: a run row per partition led by the range's first row, and its size

Revision ID: 0011
Revises: 0009
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0011"
down_revision: str | None = "0009"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("runs") as batch:
        batch.add_column(sa.Column("lead_run_id", sa.BigInteger(), nullable=True))
        batch.add_column(
            sa.Column("partition_count", sa.Integer(), server_default=sa.text("1"), nullable=False)
        )
        batch.create_index("ix_runs_lead_run_id", ["lead_run_id"])


def downgrade() -> None:
    with op.batch_alter_table("runs") as batch:
        batch.drop_index("ix_runs_lead_run_id")
        batch.drop_column("partition_count")
        batch.drop_column("lead_run_id")
