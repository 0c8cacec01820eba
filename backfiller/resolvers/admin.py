"""Resolvers of API tokens, the caller and the audit log (admin only, but for `me`)."""

from __future__ import annotations

from datetime import datetime
from typing import assert_never

import strawberry

from backfiller.definitions.loading import Definitions
from backfiller.domain.roles import Role
from backfiller.ids import audit_id, encode_cursor, parse_token_id, token_id
from backfiller.resolvers.commands import user_error
from backfiller.resolvers.context import Info, check_page_size
from backfiller.resolvers.pages import cursor_value, page_info
from backfiller.resolvers.teams import team_name_errors
from backfiller.schema.admin import (
    ApiToken,
    ApiTokenConnection,
    ApiTokenEdge,
    ApiTokenRole,
    AuditEntry,
    AuditEntryConnection,
    AuditEntryEdge,
    AuditOutcome,
    Caller,
    CreateApiTokenInput,
    CreateApiTokenPayload,
    RevokeApiTokenInput,
    RevokeApiTokenPayload,
    UpdateApiTokenInput,
    UpdateApiTokenPayload,
)
from backfiller.schema.common import UserError, UserErrorCode
from backfiller.storage.auth import AuditRepository, NewToken, TokenNameTaken, TokenRepository
from backfiller.storage.auth_records import ApiTokenRecord, AuditRecord
from backfiller.storage.auth_records import AuditOutcome as StoredOutcome

MAX_TOKEN_NAME = 200


def api_token_role(role: Role) -> ApiTokenRole:
    match role:
        case Role.VIEWER:
            return ApiTokenRole.VIEWER
        case Role.OPERATOR:
            return ApiTokenRole.OPERATOR
        case Role.ADMIN:
            return ApiTokenRole.ADMIN
        case _:
            assert_never(role)


def stored_role(role: ApiTokenRole) -> Role:
    match role:
        case ApiTokenRole.VIEWER:
            return Role.VIEWER
        case ApiTokenRole.OPERATOR:
            return Role.OPERATOR
        case ApiTokenRole.ADMIN:
            return Role.ADMIN
        case _:
            assert_never(role)


def audit_outcome(outcome: StoredOutcome) -> AuditOutcome:
    match outcome:
        case StoredOutcome.SUCCEEDED:
            return AuditOutcome.SUCCEEDED
        case StoredOutcome.REJECTED:
            return AuditOutcome.REJECTED
        case StoredOutcome.DENIED:
            return AuditOutcome.DENIED
        case StoredOutcome.FAILED:
            return AuditOutcome.FAILED
        case _:
            assert_never(outcome)


def api_token_from_record(record: ApiTokenRecord, now: datetime) -> ApiToken:
    expired = record.expires_at is not None and record.expires_at <= now
    return ApiToken(
        id=strawberry.ID(token_id(record.id)),
        name=record.name,
        role=api_token_role(record.role),
        hint=record.hint,
        created_at=record.created_at,
        created_by=record.created_by,
        expires_at=record.expires_at,
        revoked_at=record.revoked_at,
        last_used_at=record.last_used_at,
        jobs=[str(j) for j in record.jobs] if record.jobs is not None else None,
        team=record.team,
        _active=record.revoked_at is None and not expired,
    )


def _codes(raw: list[object]) -> list[UserErrorCode]:
    return [UserErrorCode[c] for c in raw if isinstance(c, str) and c in UserErrorCode.__members__]


def audit_entry_from_record(record: AuditRecord) -> AuditEntry:
    role = Role(record.role) if record.role in {r.value for r in Role} else None
    return AuditEntry(
        id=strawberry.ID(audit_id(record.id)),
        at=record.at,
        actor=record.actor,
        role=api_token_role(role) if role is not None else None,
        operation=record.operation,
        subject=record.subject,
        outcome=audit_outcome(record.outcome),
        codes=_codes(record.codes),
        message=record.message,
        request_id=record.request_id,
        run_id=strawberry.ID(record.run_id) if record.run_id else None,
    )


def me(info: Info) -> Caller:
    principal = info.context.principal
    assert principal is not None  # the field needs a role
    return Caller(
        name=principal.name,
        role=api_token_role(principal.role),
        authenticated=principal.authenticated,
        team=principal.team,
    )


def _name_errors(name: str) -> list[UserError]:
    if not name.strip() or len(name) > MAX_TOKEN_NAME or name != name.strip():
        return [
            user_error(
                UserErrorCode.INVALID_ARGUMENT,
                f"a token name is 1 to {MAX_TOKEN_NAME} characters, without surrounding spaces",
                ["name"],
            )
        ]
    if any(ord(c) < 32 or ord(c) == 127 for c in name):
        return [
            user_error(
                UserErrorCode.INVALID_ARGUMENT,
                "a token name must not contain control characters",
                ["name"],
            )
        ]
    return []


def job_scope_errors(definitions: Definitions, jobs: list[str] | None) -> list[UserError]:
    """A scope names known jobs or assets (one namespace), at least one."""
    if jobs is None:
        return []
    if not jobs:
        message = "name at least one job or asset, or leave `jobs` null for every one"
        return [user_error(UserErrorCode.INVALID_ARGUMENT, message, ["jobs"])]
    known = {job.name for job in definitions.jobs} | {a.name for a in definitions.assets}
    unknown = sorted({j for j in jobs if j not in known})
    if unknown:
        message = f"no such job or asset: {', '.join(repr(j[:200]) for j in unknown[:10])}"
        return [user_error(UserErrorCode.INVALID_ARGUMENT, message, ["jobs"])]
    return []


async def create_api_token(info: Info, input: CreateApiTokenInput) -> CreateApiTokenPayload:
    ctx = info.context
    errors = _name_errors(input.name)
    now = ctx.now()
    if input.expires_at is not None:
        if input.expires_at.tzinfo is None:
            errors.append(
                user_error(UserErrorCode.INVALID_ARGUMENT, "must have a time zone", ["expiresAt"])
            )
        elif input.expires_at <= now:
            errors.append(
                user_error(UserErrorCode.INVALID_ARGUMENT, "must be in the future", ["expiresAt"])
            )
    errors += job_scope_errors(ctx.definitions, input.jobs)
    errors += team_name_errors(input.team, ["team"])
    if errors:
        return CreateApiTokenPayload(token=None, secret=None, user_errors=errors)
    new = NewToken(
        name=input.name,
        role=stored_role(input.role),
        expires_at=input.expires_at,
        created_by=ctx.actor,
        jobs=frozenset(input.jobs) if input.jobs is not None else None,
        team=input.team,
    )
    try:
        async with ctx.database.write() as session:
            record, secret = await TokenRepository(session).add(new, now)
    except TokenNameTaken:
        return CreateApiTokenPayload(
            token=None,
            secret=None,
            user_errors=[
                user_error(
                    UserErrorCode.INVALID_ARGUMENT,
                    f"an active token is already named {input.name!r}",
                    ["name"],
                )
            ],
        )
    return CreateApiTokenPayload(
        token=api_token_from_record(record, now), secret=secret, user_errors=[]
    )


async def revoke_api_token(info: Info, input: RevokeApiTokenInput) -> RevokeApiTokenPayload:
    ctx = info.context
    pk = parse_token_id(input.id)
    not_found = user_error(UserErrorCode.NOT_FOUND, f"no token has id {input.id!r}", ["id"])
    if pk is None:
        return RevokeApiTokenPayload(token=None, user_errors=[not_found])
    now = ctx.now()
    async with ctx.database.write() as session:
        repo = TokenRepository(session)
        await repo.revoke(pk, now)  # revoking a revoked token changes nothing and is fine
        record = await repo.get(pk)
    if record is None:
        return RevokeApiTokenPayload(token=None, user_errors=[not_found])
    return RevokeApiTokenPayload(token=api_token_from_record(record, now), user_errors=[])


async def update_api_token(info: Info, input: UpdateApiTokenInput) -> UpdateApiTokenPayload:
    """Change a token's team (the only thing of a token that changes)."""
    ctx = info.context
    pk = parse_token_id(input.id)
    not_found = user_error(UserErrorCode.NOT_FOUND, f"no token has id {input.id!r}", ["id"])
    if pk is None:
        return UpdateApiTokenPayload(token=None, user_errors=[not_found])
    if input.team is strawberry.UNSET:
        errors = [user_error(UserErrorCode.INVALID_ARGUMENT, "name something to change", None)]
        return UpdateApiTokenPayload(token=None, user_errors=errors)
    errors = team_name_errors(input.team, ["team"])
    if errors:
        return UpdateApiTokenPayload(token=None, user_errors=errors)
    now = ctx.now()
    async with ctx.database.write() as session:
        repo = TokenRepository(session)
        record = await repo.get(pk)
        if record is None:
            return UpdateApiTokenPayload(token=None, user_errors=[not_found])
        if record.revoked_at is not None:
            message = "the token is revoked"
            return UpdateApiTokenPayload(
                token=None, user_errors=[user_error(UserErrorCode.INVALID_STATE, message, ["id"])]
            )
        await repo.set_team(pk, input.team)
        record = await repo.get(pk)
    assert record is not None
    return UpdateApiTokenPayload(token=api_token_from_record(record, now), user_errors=[])


async def list_api_tokens(
    info: Info, first: int = 50, after: str | None = None, include_revoked: bool = False
) -> ApiTokenConnection:
    ctx = info.context
    limit = check_page_size(first, ctx.services.settings)
    after_id = cursor_value("tok", after)
    async with ctx.database.read() as session:
        records = await TokenRepository(session).page(limit + 1, after_id, include_revoked)
    now = ctx.now()
    edges = [
        ApiTokenEdge(cursor=encode_cursor("tok", r.id), node=api_token_from_record(r, now))
        for r in records[:limit]
    ]
    return ApiTokenConnection(
        edges=edges,
        page_info=page_info(edges, len(records) > limit, after),
    )


async def list_audit_entries(
    info: Info,
    first: int = 50,
    after: str | None = None,
    actor: str | None = None,
    operation: str | None = None,
) -> AuditEntryConnection:
    ctx = info.context
    limit = check_page_size(first, ctx.services.settings)
    before_id = cursor_value("audit", after)
    async with ctx.database.read() as session:
        records = await AuditRepository(session).page(limit + 1, before_id, actor, operation)
    edges = [
        AuditEntryEdge(cursor=encode_cursor("audit", r.id), node=audit_entry_from_record(r))
        for r in records[:limit]
    ]
    return AuditEntryConnection(
        edges=edges,
        page_info=page_info(edges, len(records) > limit, after),
    )
