"""partition marks: partitions recorded by hand as succeeded or skipped (``markPartitions``)

Revision ID: 0048
Revises: 0047

A mark's effect is the partition's row of ``partition_states`` (``status`` 'success' or the new
value 'skipped', ``run_id`` null); this table keeps who marked what, as what, and why.
``partition_states.status`` is a plain string, so 'skipped' needs no change of it.
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0048"
down_revision: str | None = "0047"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

BIG_ID = sa.BigInteger().with_variant(sa.Integer(), "sqlite")
MARK_STATUS = sa.Enum("succeeded", "skipped", name="markstatus", native_enum=False, length=32)


def upgrade() -> None:
    op.create_table(
        "partition_marks",
        sa.Column("id", BIG_ID, autoincrement=True, nullable=False),
        sa.Column("job_name", sa.String(length=200), nullable=False),
        sa.Column("partition_key", sa.String(length=200), nullable=False),
        sa.Column("status", MARK_STATUS, nullable=False),
        sa.Column("reason", sa.Text(), nullable=False),
        sa.Column("actor", sa.String(length=200), nullable=True),
        sa.Column("marked_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_partition_marks")),
    )
    op.create_index("ix_partition_marks_job_name_id", "partition_marks", ["job_name", "id"])
    op.create_index(
        "ix_partition_marks_job_name_partition_key_id",
        "partition_marks",
        ["job_name", "partition_key", "id"],
    )


def downgrade() -> None:
    op.drop_table("partition_marks")
