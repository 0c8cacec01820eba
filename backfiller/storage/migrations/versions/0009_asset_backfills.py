"""asset backfills: a backfill's asset target, and slot keys wide enough for asset/partition

Revision ID: 0009
Revises: 0008
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0009"
down_revision: str | None = "0008"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("backfills") as batch:
        batch.add_column(sa.Column("asset_target", sa.JSON(), nullable=True))
    with op.batch_alter_table("slots") as batch:
        batch.alter_column(
            "partition_key",
            existing_type=sa.String(200),
            type_=sa.String(401),
            existing_nullable=False,
        )


def downgrade() -> None:
    with op.batch_alter_table("slots") as batch:
        batch.alter_column(
            "partition_key",
            existing_type=sa.String(401),
            type_=sa.String(200),
            existing_nullable=False,
        )
    with op.batch_alter_table("backfills") as batch:
        batch.drop_column("asset_target")
