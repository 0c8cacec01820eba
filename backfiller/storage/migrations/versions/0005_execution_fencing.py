"""lease deadlines and lost-worker attempts

Revision ID: 0005
Revises: 0004
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0005"
down_revision: str | None = "0004"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("slots") as batch:
        batch.add_column(
            sa.Column("lost_attempts", sa.Integer(), nullable=False, server_default=sa.text("0"))
        )
    with op.batch_alter_table("daemon_leases") as batch:
        batch.add_column(sa.Column("expires_at", sa.DateTime(timezone=True), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("daemon_leases") as batch:
        batch.drop_column("expires_at")
    with op.batch_alter_table("slots") as batch:
        batch.drop_column("lost_attempts")
