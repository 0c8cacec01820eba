"""Browser sessions of people signed in with OpenID Connect, and the sign-ins under way.

Both are kept in the database, so that every API process (``--workers``, replicas) knows them
and a restart signs nobody out. Only SHA-256 digests of the secrets are stored (the session
cookie, the CSRF token's key, a sign-in's ``state`` and its browser binding), as for API
tokens: the secrets are 256 random bits, so a digest is enough (``docs/security.md``).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import JSON, Index, String, Text, delete, select, update
from sqlalchemy.ext.asyncio import AsyncSession
from sqlalchemy.orm import Mapped, mapped_column

from backfiller.domain.roles import Role
from backfiller.storage.auth_records import _enum
from backfiller.storage.base import Base, BigId


def digest(secret: str) -> str:
    """The stored form of a secret: its SHA-256, in hex."""
    return hashlib.sha256(secret.encode()).hexdigest()


class WebSessionRecord(Base):
    """A signed-in person: who (the identity provider's claims, mapped) and until when."""

    __tablename__ = "web_sessions"

    id: Mapped[int] = mapped_column(BigId, primary_key=True, autoincrement=True)
    secret_hash: Mapped[str] = mapped_column(String(64), unique=True)
    issuer: Mapped[str] = mapped_column(String(500))
    subject: Mapped[str] = mapped_column(String(255))
    name: Mapped[str] = mapped_column(String(200))
    role: Mapped[Role] = mapped_column(_enum(Role))
    team: Mapped[str | None] = mapped_column(String(200))
    jobs: Mapped[list[Any] | None] = mapped_column(JSON, default=None)
    """The jobs and assets this person may launch (a scope claim); null for every one."""
    id_token: Mapped[str | None] = mapped_column(Text)
    """The ID token, sent back as ``id_token_hint`` when the person signs out."""
    created_at: Mapped[datetime]
    expires_at: Mapped[datetime]
    ended_at: Mapped[datetime | None]

    __table_args__ = (Index("ix_web_sessions_expires_at", "expires_at"),)


class OidcLoginRecord(Base):
    """A sign-in under way: from the redirect to the identity provider to its answer."""

    __tablename__ = "oidc_logins"

    state_hash: Mapped[str] = mapped_column(String(64), primary_key=True)
    browser_hash: Mapped[str] = mapped_column(String(64))
    """The digest of the cookie that binds the sign-in to the browser that began it."""
    nonce: Mapped[str] = mapped_column(String(100))
    code_verifier: Mapped[str] = mapped_column(String(128))
    next_url: Mapped[str] = mapped_column(String(2000))
    created_at: Mapped[datetime]

    __table_args__ = (Index("ix_oidc_logins_created_at", "created_at"),)


@dataclass(frozen=True, slots=True)
class NewSession:
    issuer: str
    subject: str
    name: str
    role: Role
    team: str | None
    jobs: list[str] | None
    id_token: str | None
    expires_at: datetime


class WebSessionRepository:
    """Sessions and pending sign-ins; the caller owns the transaction."""

    def __init__(self, session: AsyncSession) -> None:
        self.session = session

    async def add_login(
        self,
        state: str,
        browser: str,
        nonce: str,
        code_verifier: str,
        next_url: str,
        now: datetime,
    ) -> None:
        self.session.add(
            OidcLoginRecord(
                state_hash=digest(state),
                browser_hash=digest(browser),
                nonce=nonce,
                code_verifier=code_verifier,
                next_url=next_url,
                created_at=now,
            )
        )

    async def take_login(self, state: str) -> OidcLoginRecord | None:
        """The sign-in of ``state``, removed: a ``state`` is good for one answer only."""
        record = await self.session.get(OidcLoginRecord, digest(state))
        if record is not None:
            await self.session.delete(record)
        return record

    async def forget_logins_before(self, horizon: datetime) -> None:
        await self.session.execute(
            delete(OidcLoginRecord).where(OidcLoginRecord.created_at < horizon)
        )

    async def add_session(self, secret: str, new: NewSession, now: datetime) -> WebSessionRecord:
        record = WebSessionRecord(
            secret_hash=digest(secret),
            issuer=new.issuer,
            subject=new.subject,
            name=new.name,
            role=new.role,
            team=new.team,
            jobs=new.jobs,
            id_token=new.id_token,
            created_at=now,
            expires_at=new.expires_at,
            ended_at=None,
        )
        self.session.add(record)
        await self.session.flush()
        return record

    async def find_session(self, secret: str) -> WebSessionRecord | None:
        found = await self.session.execute(
            select(WebSessionRecord).where(WebSessionRecord.secret_hash == digest(secret))
        )
        return found.scalar_one_or_none()

    async def end_session(self, pk: int, now: datetime) -> None:
        await self.session.execute(
            update(WebSessionRecord)
            .where(WebSessionRecord.id == pk, WebSessionRecord.ended_at.is_(None))
            .values(ended_at=now)
        )

    async def forget_sessions_before(self, horizon: datetime) -> None:
        await self.session.execute(
            delete(WebSessionRecord).where(WebSessionRecord.expires_at < horizon)
        )


__all__ = [
    "NewSession",
    "OidcLoginRecord",
    "WebSessionRecord",
    "WebSessionRepository",
    "digest",
]
