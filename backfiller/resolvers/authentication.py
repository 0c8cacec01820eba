"""Authentication: the principal of a bearer secret (an API token or a run's credential)."""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import datetime, timedelta

from backfiller.domain.roles import Role
from backfiller.resolvers.access import Principal
from backfiller.resolvers.context import Services
from backfiller.storage.auth import TokenRepository
from backfiller.storage.auth_records import ApiTokenRecord
from backfiller.storage.run_credentials import (
    is_run_credential,
    run_is_active,
    signing_key,
    verify,
)

logger = logging.getLogger("backfiller.auth")

TOUCH_EVERY = timedelta(minutes=1)


@dataclass(frozen=True, slots=True)
class AuthFailure:
    reason: str


def _invalid(record: ApiTokenRecord | None, now: datetime) -> AuthFailure | None:
    if record is None:
        return AuthFailure("the token is not valid")
    if record.revoked_at is not None:
        return AuthFailure("the token was revoked")
    if record.expires_at is not None and record.expires_at <= now:
        return AuthFailure("the token has expired")
    return None


def _jobs(record: ApiTokenRecord) -> frozenset[str] | None:
    return frozenset(str(j) for j in record.jobs) if record.jobs is not None else None


async def authenticate(services: Services, secret: str, now: datetime) -> Principal | AuthFailure:
    """The principal of a bearer secret, or why it is not accepted."""
    if not secret or len(secret) > 1000:
        return AuthFailure("the token is not valid")
    if is_run_credential(secret):
        return await _authenticate_run(services, secret, now)
    if len(secret) > 200:
        return AuthFailure("the token is not valid")
    database = services.database
    async with database.read() as session:
        record = await TokenRepository(session).find_by_secret(secret)
    failure = _invalid(record, now)
    if failure is not None:
        return failure
    assert record is not None
    if record.last_used_at is None or now - record.last_used_at >= TOUCH_EVERY:
        try:
            async with database.write() as session:
                await TokenRepository(session).mark_used(record.id, now)
        except Exception:
            logger.warning("could not record the use of token %s", record.name, exc_info=True)
    return Principal(
        name=record.name, role=record.role, token_id=record.id, jobs=_jobs(record), team=record.team
    )


async def _authenticate_run(
    services: Services, secret: str, now: datetime
) -> Principal | AuthFailure:
    """A run's credential: signed by the shared key, unexpired, its run still active, and the
    token that launched the backfill still valid (its scopes apply; its role caps the run's)."""
    claims = verify(await signing_key(services.database), secret)
    if claims is None:
        return AuthFailure("the token is not valid")
    if claims.expires_at <= now:
        return AuthFailure("the run's credential has expired")
    if not await run_is_active(services.database, claims.run_id, claims.backfill_id):
        return AuthFailure("the run of this credential has ended, or its backfill was canceled")
    role, jobs, team = claims.role, None, None
    if claims.parent_token_id is None and services.settings.auth_mode == "none":
        # Without auth every caller is an admin: a run is no less than one who has no token.
        role = Role.ADMIN
    if claims.parent_token_id is not None:
        async with services.database.read() as session:
            parent = await TokenRepository(session).get(claims.parent_token_id)
        failure = _invalid(parent, now)
        if failure is not None:
            return AuthFailure(
                f"the token that launched this run is no longer valid: {failure.reason}"
            )
        assert parent is not None
        jobs, team = _jobs(parent), parent.team
        if parent.role is Role.VIEWER:
            role = Role.VIEWER
    return Principal(
        name=claims.launched_by,
        role=role,
        jobs=jobs,
        run_id=claims.run_id,
        backfill_id=claims.backfill_id,
        team=team,
    )
