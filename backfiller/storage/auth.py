"""Repositories of API tokens and of the audit log. They never commit.

Why SHA-256 and not a password hash: a token is 256 bits from ``secrets`` (not chosen by a
person), so there is no dictionary to try and no salt or slow hash (bcrypt, argon2) adds
anything; a guess succeeds with probability 2**-256 whatever the speed of the hash. A fast,
unsalted digest lets the lookup use a unique index, and the stored digest is useless to anyone
who reads the table (finding a secret from it is a preimage attack on SHA-256).
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import Connection, insert, select, update
from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncSession

from backfiller.domain.roles import Role
from backfiller.storage.auth_records import ApiTokenRecord, AuditOutcome, AuditRecord
from backfiller.storage.prepared import Prepared
from backfiller.storage.records import table_of
from backfiller.storage.rows import changed

TOKEN_PREFIX = "bft_"


def generate_token() -> str:
    """A new secret: 256 random bits, URL-safe, with a recognizable prefix."""
    return TOKEN_PREFIX + secrets.token_urlsafe(32)


def hash_token(token: str) -> str:
    """What is stored of a token: its SHA-256 (256 random bits need no salt nor slow hash)."""
    return hashlib.sha256(token.encode("utf-8", "surrogatepass")).hexdigest()


def token_hint(token: str) -> str:
    """A few characters that help a person recognize a token in a list; not a secret."""
    return token[: len(TOKEN_PREFIX) + 4]


@dataclass(frozen=True, slots=True)
class NewToken:
    name: str
    role: Role
    expires_at: datetime | None
    created_by: str | None
    jobs: frozenset[str] | None = None
    """The jobs it may launch; None for every job."""
    team: str | None = None
    """The team it belongs to; None for none."""


class TokenNameTaken(Exception):
    """An active token already has this name."""


class TokenRepository:
    def __init__(self, session: AsyncSession) -> None:
        self.session = session

    async def add(self, new: NewToken, now: datetime) -> tuple[ApiTokenRecord, str]:
        """Store a new token; returns the record and the secret (shown once, never stored)."""
        if await self.active_by_name(new.name) is not None:
            raise TokenNameTaken(new.name)
        secret = generate_token()
        record = ApiTokenRecord(
            name=new.name,
            role=new.role,
            token_hash=hash_token(secret),
            hint=token_hint(secret),
            created_at=now,
            created_by=new.created_by,
            expires_at=new.expires_at,
            revoked_at=None,
            last_used_at=None,
            jobs=sorted(new.jobs) if new.jobs is not None else None,
            team=new.team,
        )
        self.session.add(record)
        try:
            await self.session.flush()
        except IntegrityError as error:  # a concurrent create took the name first
            raise TokenNameTaken(new.name) from error
        return record, secret

    async def find_by_secret(self, secret: str) -> ApiTokenRecord | None:
        """The token whose secret this is, revoked and expired ones included."""
        digest = hash_token(secret)
        result = await self.session.execute(
            select(ApiTokenRecord).where(ApiTokenRecord.token_hash == digest)
        )
        record = result.scalar_one_or_none()
        # The lookup is by an index on the hash; compare again in constant time all the same.
        if record is None or not hmac.compare_digest(record.token_hash, digest):
            return None
        return record

    async def get(self, pk: int) -> ApiTokenRecord | None:
        return await self.session.get(ApiTokenRecord, pk, populate_existing=True)

    async def active_by_name(self, name: str) -> ApiTokenRecord | None:
        result = await self.session.execute(
            select(ApiTokenRecord).where(
                ApiTokenRecord.name == name, ApiTokenRecord.revoked_at.is_(None)
            )
        )
        return result.scalar_one_or_none()

    async def page(
        self, limit: int, after_id: int | None, include_revoked: bool
    ) -> list[ApiTokenRecord]:
        """Oldest first; keyset pagination on the id."""
        stmt = select(ApiTokenRecord).order_by(ApiTokenRecord.id).limit(limit)
        if after_id is not None:
            stmt = stmt.where(ApiTokenRecord.id > after_id)
        if not include_revoked:
            stmt = stmt.where(ApiTokenRecord.revoked_at.is_(None))
        return list((await self.session.execute(stmt)).scalars())

    async def revoke(self, pk: int, now: datetime) -> bool:
        """Revoke a token that is not revoked yet; returns whether it changed."""
        result = await self.session.execute(
            update(ApiTokenRecord)
            .where(ApiTokenRecord.id == pk, ApiTokenRecord.revoked_at.is_(None))
            .values(revoked_at=now)
            .execution_options(synchronize_session=False)
        )
        return bool(changed(result))

    async def set_team(self, pk: int, team: str | None) -> bool:
        """Set (None: remove) the team of a token that is not revoked; whether it changed."""
        result = await self.session.execute(
            update(ApiTokenRecord)
            .where(ApiTokenRecord.id == pk, ApiTokenRecord.revoked_at.is_(None))
            .values(team=team)
            .execution_options(synchronize_session=False)
        )
        return bool(changed(result))

    async def mark_used(self, pk: int, now: datetime) -> None:
        await self.session.execute(
            update(ApiTokenRecord)
            .where(ApiTokenRecord.id == pk)
            .values(last_used_at=now)
            .execution_options(synchronize_session=False)
        )


@dataclass(frozen=True, slots=True)
class AuditEntry:
    at: datetime
    actor: str | None
    role: str | None
    operation: str
    subject: str | None
    outcome: AuditOutcome
    codes: Sequence[str]
    message: str | None
    request_id: str | None
    run_id: str | None = None


_INSERT_AUDIT = Prepared(insert(table_of(AuditRecord)))


def add_audit_entry(conn: Connection, entry: AuditEntry) -> None:
    """Append an entry to the audit log, in the caller's transaction (synchronous)."""
    _INSERT_AUDIT.rows(conn, _audit_row(entry))


def add_audit_entries(conn: Connection, entries: Sequence[AuditEntry]) -> None:
    """``add_audit_entry`` of each of ``entries``, in order, in one statement."""
    if len(entries) == 1:
        add_audit_entry(conn, entries[0])  # a plain execute: cheaper than a batch of one
    else:
        _INSERT_AUDIT.many(conn, [_audit_row(entry) for entry in entries])


def _audit_row(entry: AuditEntry) -> dict[str, object]:
    return {
        "at": entry.at,
        "actor": entry.actor,
        "role": entry.role,
        "operation": entry.operation,
        "subject": entry.subject,
        "outcome": entry.outcome,
        "codes": list(entry.codes),
        "message": entry.message,
        "request_id": entry.request_id,
        "run_id": entry.run_id,
    }


class AuditRepository:
    def __init__(self, session: AsyncSession) -> None:
        self.session = session

    async def add(self, entry: AuditEntry) -> None:
        await self.session.run_sync(lambda sync: add_audit_entry(sync.connection(), entry))

    async def page(
        self,
        limit: int,
        before_id: int | None,
        actor: str | None = None,
        operation: str | None = None,
    ) -> list[AuditRecord]:
        """Newest first; keyset pagination on the id."""
        stmt = select(AuditRecord).order_by(AuditRecord.id.desc()).limit(limit)
        if before_id is not None:
            stmt = stmt.where(AuditRecord.id < before_id)
        if actor is not None:
            stmt = stmt.where(AuditRecord.actor == actor)
        if operation is not None:
            stmt = stmt.where(AuditRecord.operation == operation)
        return list((await self.session.execute(stmt)).scalars())
