"""launch notify: on PostgreSQL, an insert into backfills notifies the daemons at once

Revision ID: 0012
Revises: 0011
"""

from collections.abc import Sequence

from alembic import op

revision: str = "0012"
down_revision: str | None = "0011"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

# The channel of backfiller.storage.launch_watch (a migration keeps its own copy: it must not
# change when the code does).
_CHANNEL = "backfiller_launched"


def upgrade() -> None:
    if op.get_bind().dialect.name != "postgresql":
        return  # SQLite's daemons poll the newest id instead
    op.execute(
        "CREATE FUNCTION backfiller_announce_launch() RETURNS trigger LANGUAGE plpgsql AS "
        f"$$ BEGIN PERFORM pg_notify('{_CHANNEL}', ''); RETURN NULL; END $$"
    )
    # Once per statement: a transaction's notifications of one channel arrive as one.
    op.execute(
        "CREATE TRIGGER backfills_announce_launch AFTER INSERT ON backfills "
        "FOR EACH STATEMENT EXECUTE FUNCTION backfiller_announce_launch()"
    )


def downgrade() -> None:
    if op.get_bind().dialect.name != "postgresql":
        return
    op.execute("DROP TRIGGER backfills_announce_launch ON backfills")
    op.execute("DROP FUNCTION backfiller_announce_launch()")
