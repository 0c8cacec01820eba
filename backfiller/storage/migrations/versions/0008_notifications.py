"""Webhook notifications (per-backfill webhooks, deliveries, attempts, the notifier's cursor);
a backfill's launch trace context

Revision ID: 0008
Revises: 0007
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0008"
down_revision: str | None = "0007"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

BIG_ID = sa.BigInteger().with_variant(sa.Integer(), "sqlite")


def upgrade() -> None:
    with op.batch_alter_table("backfills", schema=None) as batch_op:
        batch_op.add_column(sa.Column("trace_parent", sa.String(length=64), nullable=True))
    op.create_table(
        "backfill_webhooks",
        sa.Column("id", BIG_ID, autoincrement=True, nullable=False),
        sa.Column("backfill_id", BIG_ID, nullable=False),
        sa.Column("url", sa.String(length=2000), nullable=False),
        sa.Column("events", sa.JSON(), nullable=False),
        sa.Column("format", sa.String(length=16), nullable=False),
        sa.ForeignKeyConstraint(
            ["backfill_id"],
            ["backfills.id"],
            name=op.f("fk_backfill_webhooks_backfill_id_backfills"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_backfill_webhooks")),
    )
    op.create_index(
        "ix_backfill_webhooks_backfill_id", "backfill_webhooks", ["backfill_id"], unique=False
    )
    op.create_table(
        "notifications",
        sa.Column("id", BIG_ID, autoincrement=True, nullable=False),
        sa.Column("backfill_id", BIG_ID, nullable=False),
        sa.Column("event_id", sa.BigInteger(), nullable=False),
        sa.Column("target", sa.String(length=64), nullable=False),
        sa.Column("event", sa.String(length=32), nullable=False),
        sa.Column("url", sa.String(length=2000), nullable=False),
        sa.Column("format", sa.String(length=16), nullable=False),
        sa.Column("payload", sa.JSON(), nullable=False),
        sa.Column("idempotency_key", sa.String(length=100), nullable=False),
        sa.Column("status", sa.String(length=16), nullable=False),
        sa.Column("attempts", sa.Integer(), nullable=False),
        sa.Column("next_attempt_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("lease_until", sa.DateTime(timezone=True), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("delivered_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("last_status_code", sa.Integer(), nullable=True),
        sa.Column("last_error", sa.Text(), nullable=True),
        sa.ForeignKeyConstraint(
            ["backfill_id"],
            ["backfills.id"],
            name=op.f("fk_notifications_backfill_id_backfills"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_notifications")),
        sa.UniqueConstraint("event_id", "target", name=op.f("uq_notifications_event_id_target")),
        sa.UniqueConstraint("idempotency_key", name=op.f("uq_notifications_idempotency_key")),
    )
    op.create_index(
        "ix_notifications_status_next_attempt_at",
        "notifications",
        ["status", "next_attempt_at"],
        unique=False,
    )
    op.create_index(
        "ix_notifications_backfill_id_id", "notifications", ["backfill_id", "id"], unique=False
    )
    op.create_table(
        "notification_attempts",
        sa.Column("id", BIG_ID, autoincrement=True, nullable=False),
        sa.Column("notification_id", BIG_ID, nullable=False),
        sa.Column("attempt", sa.Integer(), nullable=False),
        sa.Column("at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("status_code", sa.Integer(), nullable=True),
        sa.Column("error", sa.Text(), nullable=True),
        sa.Column("duration_ms", sa.Integer(), nullable=False),
        sa.Column("response_body", sa.Text(), nullable=True),
        sa.ForeignKeyConstraint(
            ["notification_id"],
            ["notifications.id"],
            name=op.f("fk_notification_attempts_notification_id_notifications"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_notification_attempts")),
    )
    op.create_index(
        "ix_notification_attempts_notification_id_id",
        "notification_attempts",
        ["notification_id", "id"],
        unique=False,
    )
    cursor = op.create_table(
        "notifier_cursor",
        sa.Column("name", sa.String(length=32), nullable=False),
        sa.Column("last_event_id", sa.BigInteger(), nullable=False),
        sa.PrimaryKeyConstraint("name", name=op.f("pk_notifier_cursor")),
    )
    # Start after the events already recorded: upgrading never notifies the past.
    last = op.get_bind().execute(sa.text("SELECT MAX(id) FROM backfill_events")).scalar()
    op.bulk_insert(cursor, [{"name": "events", "last_event_id": int(last or 0)}])


def downgrade() -> None:
    op.drop_table("notifier_cursor")
    op.drop_index("ix_notification_attempts_notification_id_id", "notification_attempts")
    op.drop_table("notification_attempts")
    op.drop_index("ix_notifications_backfill_id_id", "notifications")
    op.drop_index("ix_notifications_status_next_attempt_at", "notifications")
    op.drop_table("notifications")
    op.drop_index("ix_backfill_webhooks_backfill_id", "backfill_webhooks")
    op.drop_table("backfill_webhooks")
    with op.batch_alter_table("backfills", schema=None) as batch_op:
        batch_op.drop_column("trace_parent")
