"""notification destination: deliveries in flight are limited per scheme://host:port

Revision ID: 0045
Revises: 0030
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0045"
down_revision: str | None = "0030"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    # Rows made before have none: the notifier reads their URL instead.
    with op.batch_alter_table("notifications") as batch:
        batch.add_column(sa.Column("destination", sa.String(length=300), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("notifications") as batch:
        batch.drop_column("destination")
