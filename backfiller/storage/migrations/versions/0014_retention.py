"""retention: the indexes that find history past its keeping

Revision ID: 0014
Revises: 0013

On PostgreSQL the indexes are built ``CONCURRENTLY`` (outside a transaction).
"""

from collections.abc import Sequence

from alembic import op

revision: str = "0014"
down_revision: str | None = "0013"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_INDEXES = (
    ("ix_backfills_ended_at", "backfills", ("ended_at",)),
    ("ix_trigger_evaluations_evaluated_at", "trigger_evaluations", ("evaluated_at",)),
)


def upgrade() -> None:
    if op.get_bind().dialect.name == "postgresql":
        with op.get_context().autocommit_block():
            for name, table, columns in _INDEXES:
                op.create_index(
                    name, table, list(columns), postgresql_concurrently=True, if_not_exists=True
                )
        return
    for name, table, columns in _INDEXES:
        op.create_index(name, table, list(columns))


def downgrade() -> None:
    for name, table, _columns in reversed(_INDEXES):
        op.drop_index(name, table_name=table)
