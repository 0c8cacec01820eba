"""backfill kind: a column says whether a backfill runs a job or assets (was the job name
"@assets" for asset backfills, whose job_name is now empty)

Revision ID: 0030
Revises: 0012
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0030"
down_revision: str | None = "0012"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

# The job name asset backfills were stored under before this revision (a migration keeps its
# own copy: it must not change when the code does).
_ASSETS_JOB_NAME = "@assets"


def upgrade() -> None:
    with op.batch_alter_table("backfills") as batch:
        batch.add_column(
            sa.Column("kind", sa.String(length=32), server_default="job", nullable=False)
        )
    op.execute(
        f"UPDATE backfills SET kind = 'assets', job_name = '' WHERE job_name = '{_ASSETS_JOB_NAME}'"
    )


def downgrade() -> None:
    op.execute(f"UPDATE backfills SET job_name = '{_ASSETS_JOB_NAME}' WHERE kind = 'assets'")
    with op.batch_alter_table("backfills") as batch:
        batch.drop_column("kind")
