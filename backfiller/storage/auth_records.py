"""Records of access control: API tokens (only their hashes) and the audit log of mutations.

``Role`` is the domain's (``domain.roles``), imported here for the records' columns."""

from __future__ import annotations

import enum
from datetime import datetime
from typing import Any

from sqlalchemy import JSON, Enum, Index, String, Text, text
from sqlalchemy.orm import Mapped, mapped_column

from backfiller.domain.roles import Role
from backfiller.storage.base import Base, BigId


class AuditOutcome(enum.StrEnum):
    SUCCEEDED = "succeeded"
    REJECTED = "rejected"  # answered with userErrors (bad input, wrong state, ...)
    DENIED = "denied"  # refused by access control or a rate limit
    FAILED = "failed"  # an unexpected error


def _enum(cls: type[Any]) -> Enum:
    return Enum(
        cls,
        native_enum=False,
        create_constraint=False,
        length=32,
        values_callable=lambda e: [m.value for m in e],
    )


class ApiTokenRecord(Base):
    """An API token. The secret itself is never stored: only its SHA-256."""

    __tablename__ = "api_tokens"

    id: Mapped[int] = mapped_column(BigId, primary_key=True, autoincrement=True)
    name: Mapped[str] = mapped_column(String(200))
    role: Mapped[Role] = mapped_column(_enum(Role))
    token_hash: Mapped[str] = mapped_column(String(64), unique=True)
    hint: Mapped[str] = mapped_column(String(16))
    created_at: Mapped[datetime]
    created_by: Mapped[str | None] = mapped_column(String(200))
    expires_at: Mapped[datetime | None]
    revoked_at: Mapped[datetime | None]
    last_used_at: Mapped[datetime | None]
    jobs: Mapped[list[Any] | None] = mapped_column(JSON, default=None)
    """The names of the jobs this token may launch; null for every job."""
    team: Mapped[str | None] = mapped_column(String(200), default=None)
    """The team it belongs to: what it launches acts for this team (admin-managed)."""

    __table_args__ = (
        # One active token per name; a revoked name may be reused.
        Index(
            "uq_api_tokens_active_name",
            "name",
            unique=True,
            sqlite_where=text("revoked_at IS NULL"),
            postgresql_where=text("revoked_at IS NULL"),
        ),
    )


class AuditRecord(Base):
    """One mutation: who, what, when, and how it ended."""

    __tablename__ = "audit_log"

    id: Mapped[int] = mapped_column(BigId, primary_key=True, autoincrement=True)
    at: Mapped[datetime]
    actor: Mapped[str | None] = mapped_column(String(400))
    role: Mapped[str | None] = mapped_column(String(32))
    operation: Mapped[str] = mapped_column(String(200))
    subject: Mapped[str | None] = mapped_column(String(400))
    outcome: Mapped[AuditOutcome] = mapped_column(_enum(AuditOutcome))
    codes: Mapped[list[Any]] = mapped_column(JSON, default=list)
    message: Mapped[str | None] = mapped_column(Text)
    request_id: Mapped[str | None] = mapped_column(String(64))
    run_id: Mapped[str | None] = mapped_column(String(64))
    """The run whose own credential made the request (``run_12``); set only from one."""

    # The log's filters, each read newest first (``AuditRepository.page``).
    __table_args__ = (
        Index("ix_audit_log_at", "at"),
        Index("ix_audit_log_actor_id", "actor", "id"),
        Index("ix_audit_log_operation_id", "operation", "id"),
    )


class SigningKeyRecord(Base):
    """A random key that signs the credentials given to runs (created once, on first use)."""

    __tablename__ = "signing_keys"

    purpose: Mapped[str] = mapped_column(String(32), primary_key=True)
    secret: Mapped[str] = mapped_column(String(128))
    created_at: Mapped[datetime]
