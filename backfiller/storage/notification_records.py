"""Records of webhook notifications: per-backfill targets, deliveries and their attempts.

A notification is created once per (backfill event, target) by the daemon's notifier, from
``backfill_events`` rows past ``notifier_cursor``; the unique ``(event_id, target)`` makes that
fan-out idempotent, so a daemon killed half-way and restarted never creates a second
notification of one event. Its ``idempotency_key`` is sent with every attempt.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import JSON, BigInteger, ForeignKey, Index, Integer, String, Text, UniqueConstraint
from sqlalchemy.orm import Mapped, mapped_column

from backfiller.storage.base import Base, BigId


class BackfillWebhookRecord(Base):
    """A webhook a backfill was launched with (``notify: [{url, events, format}]``)."""

    __tablename__ = "backfill_webhooks"

    id: Mapped[int] = mapped_column(BigId, primary_key=True, autoincrement=True)
    backfill_id: Mapped[int] = mapped_column(ForeignKey("backfills.id", ondelete="CASCADE"))
    url: Mapped[str] = mapped_column(String(2000))
    events: Mapped[list[Any]] = mapped_column(JSON)
    format: Mapped[str] = mapped_column(String(16))

    __table_args__ = (Index("ix_backfill_webhooks_backfill_id", "backfill_id"),)


class NotificationRecord(Base):
    """One event to deliver to one URL, and where its delivery stands."""

    __tablename__ = "notifications"

    id: Mapped[int] = mapped_column(BigId, primary_key=True, autoincrement=True)
    backfill_id: Mapped[int] = mapped_column(ForeignKey("backfills.id", ondelete="CASCADE"))
    event_id: Mapped[int] = mapped_column(BigInteger)
    target: Mapped[str] = mapped_column(String(64))
    event: Mapped[str] = mapped_column(String(32))
    url: Mapped[str] = mapped_column(String(2000))
    # ``scheme://host:port`` of ``url``: deliveries in flight are limited per destination.
    destination: Mapped[str | None] = mapped_column(String(300))
    format: Mapped[str] = mapped_column(String(16))
    payload: Mapped[dict[str, Any]] = mapped_column(JSON)
    idempotency_key: Mapped[str] = mapped_column(String(100), unique=True)
    status: Mapped[str] = mapped_column(String(16))
    attempts: Mapped[int] = mapped_column(Integer, default=0)
    next_attempt_at: Mapped[datetime]
    lease_until: Mapped[datetime | None]
    created_at: Mapped[datetime]
    delivered_at: Mapped[datetime | None]
    last_status_code: Mapped[int | None]
    last_error: Mapped[str | None] = mapped_column(Text)

    __table_args__ = (
        UniqueConstraint("event_id", "target"),
        Index("ix_notifications_status_next_attempt_at", "status", "next_attempt_at"),
        Index("ix_notifications_backfill_id_id", "backfill_id", "id"),
    )


class NotificationAttemptRecord(Base):
    """One attempt to deliver a notification, and the receiver's answer."""

    __tablename__ = "notification_attempts"

    id: Mapped[int] = mapped_column(BigId, primary_key=True, autoincrement=True)
    notification_id: Mapped[int] = mapped_column(ForeignKey("notifications.id", ondelete="CASCADE"))
    attempt: Mapped[int] = mapped_column(Integer)
    at: Mapped[datetime]
    status_code: Mapped[int | None]
    error: Mapped[str | None] = mapped_column(Text)
    duration_ms: Mapped[int] = mapped_column(Integer)
    response_body: Mapped[str | None] = mapped_column(Text)

    __table_args__ = (
        Index("ix_notification_attempts_notification_id_id", "notification_id", "id"),
    )


class NotifierCursorRecord(Base):
    """How far the notifier has read ``backfill_events`` (one row, created by the migration
    at the events' id then, so upgrading never notifies the past)."""

    __tablename__ = "notifier_cursor"

    name: Mapped[str] = mapped_column(String(32), primary_key=True)
    last_event_id: Mapped[int] = mapped_column(BigInteger)
