"""cron triggers: the schedule a trigger's state follows, the tick an evaluation stands for

Revision ID: 0046
Revises: 0015
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0046"
down_revision: str | None = "0015"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    # Rows made before have none: interval triggers and on-demand evaluations need none.
    with op.batch_alter_table("trigger_states") as batch:
        batch.add_column(sa.Column("schedule", sa.String(length=300), nullable=True))
    with op.batch_alter_table("trigger_evaluations") as batch:
        batch.add_column(sa.Column("scheduled_at", sa.DateTime(timezone=True), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("trigger_evaluations") as batch:
        batch.drop_column("scheduled_at")
    with op.batch_alter_table("trigger_states") as batch:
        batch.drop_column("schedule")
