"""Token job scopes, the run of an audit entry, the key that signs run credentials

Revision ID: 0007
Revises: 0006
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0007"
down_revision: str | None = "0006"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("api_tokens", schema=None) as batch_op:
        batch_op.add_column(sa.Column("jobs", sa.JSON(), nullable=True))
    with op.batch_alter_table("audit_log", schema=None) as batch_op:
        batch_op.add_column(sa.Column("run_id", sa.String(length=64), nullable=True))
    op.create_table(
        "signing_keys",
        sa.Column("purpose", sa.String(length=32), nullable=False),
        sa.Column("secret", sa.String(length=128), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("purpose", name=op.f("pk_signing_keys")),
    )


def downgrade() -> None:
    op.drop_table("signing_keys")
    with op.batch_alter_table("audit_log", schema=None) as batch_op:
        batch_op.drop_column("run_id")
    with op.batch_alter_table("api_tokens", schema=None) as batch_op:
        batch_op.drop_column("jobs")
