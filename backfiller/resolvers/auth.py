"""Access control: the minimum role of every root field, checked in one place, deny by default.

:class:`Authorize` is a schema extension. Before any root field of a query or a mutation
resolves, and before a subscription starts, it looks the field up in :data:`FIELD_ROLES`:

- a field missing from the table is refused, whatever the role (deny by default);
- no principal at all is ``UNAUTHENTICATED``; a role below the minimum is ``FORBIDDEN``;
- launches and trigger evaluations also pass the per-token rate limit (``RATE_LIMITED``).

Refused mutations answer with their payload and ``userErrors`` (the payload's other fields
null), so clients handle them like any expected failure; refused queries and subscriptions
answer with a top-level error whose ``extensions.code`` is the same code. Every mutation,
allowed or refused, is recorded in the audit log.
"""

from __future__ import annotations

import inspect
import logging
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from graphql import (
    FieldNode,
    FragmentDefinitionNode,
    FragmentSpreadNode,
    GraphQLObjectType,
    GraphQLResolveInfo,
    InlineFragmentNode,
    OperationDefinitionNode,
    OperationType,
    SelectionSetNode,
    get_nullable_type,
)
from strawberry.extensions import SchemaExtension
from strawberry.types.base import StrawberryList, StrawberryOptional

from backfiller.resolvers.access import Principal, actor_of
from backfiller.resolvers.context import AuditDraft, Context, PublicError, Services
from backfiller.schema.common import UserError, UserErrorCode
from backfiller.storage.auth import AuditEntry, AuditRepository, TokenRepository
from backfiller.storage.auth_records import AuditOutcome, Role

logger = logging.getLogger("backfiller.auth")

PUBLIC = None
"""A field anyone may ask for, even without a token (only ``__typename``)."""

VIEWER, OPERATOR, ADMIN = Role.VIEWER, Role.OPERATOR, Role.ADMIN

FIELD_ROLES: Mapping[str, Mapping[str, Role | None]] = {
    "Query": {
        "__typename": PUBLIC,
        "__schema": VIEWER,
        "__type": VIEWER,
        "apiVersion": VIEWER,
        "me": VIEWER,
        "backfill": VIEWER,
        "backfills": VIEWER,
        "node": VIEWER,
        "jobs": VIEWER,
        "job": VIEWER,
        "assets": VIEWER,
        "asset": VIEWER,
        "run": VIEWER,
        "runs": VIEWER,
        "triggers": VIEWER,
        "trigger": VIEWER,
        "apiTokens": ADMIN,
        "auditLog": ADMIN,
    },
    "Mutation": {
        "__typename": PUBLIC,
        "launchBackfill": OPERATOR,
        "previewBackfill": OPERATOR,
        "pauseBackfill": OPERATOR,
        "resumeBackfill": OPERATOR,
        "cancelBackfill": OPERATOR,
        "retryBackfill": OPERATOR,
        "evaluateTrigger": OPERATOR,
        "setTriggerEnabled": ADMIN,
        "addDynamicPartitions": ADMIN,
        "deleteDynamicPartitions": ADMIN,
        "createApiToken": ADMIN,
        "revokeApiToken": ADMIN,
    },
    "Subscription": {
        "__typename": PUBLIC,
        "backfillProgress": VIEWER,
    },
}
"""Root field -> the least role that may use it. A field missing here is refused."""

RATE_LIMITED_FIELDS: Mapping[str, str] = {
    "launchBackfill": "launch",
    "retryBackfill": "launch",
    "evaluateTrigger": "evaluate",
}
"""Mutations that count against a per-token rate limit, by bucket."""


@dataclass(frozen=True, slots=True)
class Refusal:
    code: UserErrorCode
    message: str
    field: list[str] | None = None


def unstorable_text(value: Any, path: list[str]) -> list[str] | None:
    """The path of a string no database can store (NUL, lone surrogates), if any.

    PostgreSQL refuses NUL in text and JSON; neither database takes text that is not UTF-8.
    Checked on the arguments of every root field, so no resolver meets such a string.
    """
    if isinstance(value, str):
        if "\x00" in value:
            return path
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            return path
        return None
    if isinstance(value, dict):
        for key, item in value.items():
            found = unstorable_text(item, [*path, str(key)])
            if found is not None:
                return found
    elif isinstance(value, list | tuple):
        for index, item in enumerate(value):
            found = unstorable_text(item, [*path, str(index)])
            if found is not None:
                return found
    return None


def check_text(kwargs: dict[str, Any]) -> Refusal | None:
    for name, value in kwargs.items():
        found = unstorable_text(value, [name])
        if found is not None:
            field = found[1:] if found[0] == "input" and len(found) > 1 else found
            return Refusal(
                UserErrorCode.INVALID_ARGUMENT,
                "must not contain NUL characters or unpaired UTF-16 surrogates",
                field,
            )
    return None


def decide(principal: Principal | None, root: str, field: str) -> Refusal | None:
    """Whether ``principal`` may use the root field ``root.field``; None when it may."""
    table = FIELD_ROLES.get(root, {})
    if field not in table:
        return Refusal(UserErrorCode.FORBIDDEN, f"`{field}` is not open to any role")
    needed = table[field]
    if needed is PUBLIC:
        return None
    if principal is None:
        return Refusal(
            UserErrorCode.UNAUTHENTICATED,
            "a token is required: send `Authorization: Bearer <token>`",
        )
    if not principal.role.allows(needed):
        return Refusal(
            UserErrorCode.FORBIDDEN,
            f"`{field}` needs the {needed.value} role; this token is a {principal.role.value}",
        )
    return None


def check_rate(ctx: Context, field: str) -> Refusal | None:
    bucket = RATE_LIMITED_FIELDS.get(field)
    if bucket is None:
        return None
    settings = ctx.services.settings
    caller = ctx.principal.name if ctx.principal and ctx.principal.name else "anonymous"
    if ctx.services.rate_limiter.allow(
        bucket,
        caller,
        settings.launch_rate_limit,
        settings.rate_limit_window_seconds,
        ctx.now(),
    ):
        return None
    return Refusal(
        UserErrorCode.RATE_LIMITED,
        f"more than {settings.launch_rate_limit} requests of this kind in "
        f"{settings.rate_limit_window_seconds:g} s from this token; try again later",
    )


class Authorize(SchemaExtension):
    """Check every root field against :data:`FIELD_ROLES`; audit every mutation."""

    def on_execute(self) -> Iterator[None]:
        document = self.execution_context.graphql_document
        operation = _operation(document, self.execution_context.operation_name)
        if operation is not None and operation.operation is OperationType.SUBSCRIPTION:
            ctx = self.execution_context.context
            principal = getattr(ctx, "principal", None)
            for name in _root_fields(operation.selection_set, document):
                refusal = decide(principal, "Subscription", name)
                if refusal is not None:
                    raise PublicError(refusal.message, code=refusal.code.name)
        yield

    def resolve(
        self,
        _next: Callable[..., Any],
        root: Any,
        info: GraphQLResolveInfo[Context],
        *args: Any,
        **kwargs: Any,
    ) -> Any:
        if info.path.prev is not None:
            return _next(root, info, *args, **kwargs)
        ctx: Context = info.context
        root_name = info.parent_type.name
        refusal = decide(ctx.principal, root_name, info.field_name)
        if root_name != "Mutation":
            if refusal is None:
                refusal = check_text(kwargs)
            if refusal is not None:
                raise PublicError(refusal.message, code=refusal.code.name)
            return _next(root, info, *args, **kwargs)
        if info.field_name == "__typename":
            return _next(root, info, *args, **kwargs)
        return self._mutate(_next, root, info, refusal, args, kwargs)

    async def _mutate(
        self,
        _next: Callable[..., Any],
        root: Any,
        info: GraphQLResolveInfo[Context],
        refusal: Refusal | None,
        args: tuple[Any, ...],
        kwargs: dict[str, Any],
    ) -> Any:
        ctx: Context = info.context
        subject = subject_of(kwargs)
        ctx.audit = draft = AuditDraft(info.field_name, subject)
        outcome = AuditOutcome.DENIED
        if refusal is None:
            refusal, outcome = check_text(kwargs), AuditOutcome.REJECTED
        if refusal is None:
            refusal, outcome = check_rate(ctx, info.field_name), AuditOutcome.DENIED
        if refusal is not None:
            payload = refusal_payload(info, refusal, kwargs)
            await record(ctx, info.field_name, subject, outcome, [refusal], None)
            return payload
        try:
            result = _next(root, info, *args, **kwargs)
            if inspect.isawaitable(result):
                result = await result
        except Exception:
            await record(
                ctx,
                info.field_name,
                subject,
                AuditOutcome.FAILED,
                [],
                f"unexpected error (request {ctx.request_id})",
            )
            raise
        if draft.written:
            return result
        errors: list[UserError] = list(getattr(result, "user_errors", None) or [])
        outcome = AuditOutcome.REJECTED if errors else AuditOutcome.SUCCEEDED
        await record(ctx, info.field_name, subject, outcome, errors, result_of(result))
        return result


def _operation(document: Any, name: str | None) -> OperationDefinitionNode | None:
    if document is None:
        return None
    operations = [d for d in document.definitions if isinstance(d, OperationDefinitionNode)]
    for op in operations:
        if name is None or (op.name is not None and op.name.value == name):
            return op
    return None


def _root_fields(selection_set: SelectionSetNode, document: Any, depth: int = 0) -> list[str]:
    """Names of the root fields an operation selects, through fragments."""
    if depth > 20:
        return []
    fragments = {
        d.name.value: d for d in document.definitions if isinstance(d, FragmentDefinitionNode)
    }
    names: list[str] = []
    for selection in selection_set.selections:
        if isinstance(selection, FieldNode):
            names.append(selection.name.value)
        elif isinstance(selection, InlineFragmentNode):
            names += _root_fields(selection.selection_set, document, depth + 1)
        elif isinstance(selection, FragmentSpreadNode):
            fragment = fragments.get(selection.name.value)
            if fragment is not None:
                names += _root_fields(fragment.selection_set, document, depth + 1)
    return names


def refusal_payload(
    info: GraphQLResolveInfo[Context], refusal: Refusal, kwargs: dict[str, Any]
) -> Any:
    """The mutation's own payload type, carrying the refusal as its only user error."""
    error = UserError(field=refusal.field, message=refusal.message, code=refusal.code)
    graphql_type = get_nullable_type(info.return_type)
    assert isinstance(graphql_type, GraphQLObjectType)
    definition = graphql_type.extensions["strawberry-definition"]
    given = kwargs.get("input")
    values: dict[str, Any] = {}
    for field in definition.fields:
        if field.python_name == "user_errors":
            values["user_errors"] = [error]
        elif field.base_resolver is not None:
            continue
        elif isinstance(field.type, StrawberryOptional):
            values[field.python_name] = None
        elif isinstance(field.type, StrawberryList):
            values[field.python_name] = []
        elif field.type is int:
            values[field.python_name] = 0
        elif field.type is bool:
            values[field.python_name] = False
        elif field.type is str:
            value = given.get(field.python_name) if isinstance(given, dict) else None
            values[field.python_name] = value if isinstance(value, str) else ""
        else:
            values[field.python_name] = None
    return definition.origin(**values)


def subject_of(kwargs: dict[str, Any]) -> str | None:
    """What a mutation is about, for the audit log: an id, a name, a job."""
    given = kwargs.get("input")  # the raw argument: a dict of GraphQL names
    if not isinstance(given, dict):
        return None
    for key in ("id", "name", "trigger"):
        value = given.get(key)
        if isinstance(value, str):
            return value[:400]
    target = given.get("target")
    job = target.get("job") if isinstance(target, dict) else None
    if isinstance(job, str):
        return f"job {job}"[:400]
    return None


def result_of(payload: Any) -> str | None:
    """The id of what a mutation created or changed, for the audit log."""
    for attribute in ("backfill", "token", "evaluation"):
        found = getattr(payload, attribute, None)
        found_id = getattr(found, "id", None)
        if isinstance(found_id, str):
            return found_id
    return None


def audit_entry(
    ctx: Context,
    operation: str,
    subject: str | None,
    outcome: AuditOutcome,
    errors: list[UserError] | list[Refusal],
    message: str | None,
) -> AuditEntry:
    principal = ctx.principal
    codes = [e.code.name for e in errors]
    if errors and message is None:
        message = "; ".join(e.message for e in errors)[:2000]
    return AuditEntry(
        at=ctx.now(),
        actor=ctx.actor or (principal.name if principal else None),
        role=principal.role.value if principal else None,
        operation=operation,
        subject=_storable(subject),
        outcome=outcome,
        codes=codes,
        message=_storable(message),
        request_id=ctx.request_id or None,
    )


async def record(
    ctx: Context,
    operation: str,
    subject: str | None,
    outcome: AuditOutcome,
    errors: list[UserError] | list[Refusal],
    message: str | None,
) -> None:
    """Append one audit entry; a failure to write it is logged, never shown to the caller."""
    entry = audit_entry(ctx, operation, subject, outcome, errors, message)
    try:
        async with ctx.database.write() as session:
            await AuditRepository(session).add(entry)
    except Exception:
        logger.exception("could not write the audit entry of request %s", ctx.request_id)


def success_audit(ctx: Context) -> Callable[[str], AuditEntry] | None:
    """For a mutation that writes its own success entry, in the transaction that makes its
    change (so the two commit or roll back together): the entry, given the id of the result.

    None outside a mutation. Once that transaction has committed, call ``mark_audited`` so
    that ``Authorize`` writes nothing more.
    """
    draft = ctx.audit
    if draft is None or draft.written:
        return None
    return lambda result: audit_entry(
        ctx, draft.operation, draft.subject, AuditOutcome.SUCCEEDED, [], result
    )


def mark_audited(ctx: Context) -> None:
    if ctx.audit is not None:
        ctx.audit.written = True


def _storable(text: str | None) -> str | None:
    """``text`` as the database can keep it: NUL and unpaired surrogates escaped."""
    if text is None:
        return None
    return text.encode("utf-8", "backslashreplace").decode("utf-8").replace("\x00", "\\x00")


# -- authentication ---------------------------------------------------------------------------

TOUCH_EVERY = timedelta(minutes=1)


@dataclass(frozen=True, slots=True)
class AuthFailure:
    reason: str


async def authenticate(services: Services, secret: str, now: datetime) -> Principal | AuthFailure:
    """The principal of a bearer token, or why it is not accepted."""
    if not secret or len(secret) > 200:
        return AuthFailure("the token is not valid")
    database = services.database
    async with database.read() as session:
        record_ = await TokenRepository(session).find_by_secret(secret)
    if record_ is None:
        return AuthFailure("the token is not valid")
    if record_.revoked_at is not None:
        return AuthFailure("the token was revoked")
    if record_.expires_at is not None and record_.expires_at <= now:
        return AuthFailure("the token has expired")
    if record_.last_used_at is None or now - record_.last_used_at >= TOUCH_EVERY:
        try:
            async with database.write() as session:
                await TokenRepository(session).mark_used(record_.id, now)
        except Exception:
            logger.warning("could not record the use of token %s", record_.name, exc_info=True)
    return Principal(name=record_.name, role=record_.role, token_id=record_.id)


__all__ = [
    "FIELD_ROLES",
    "RATE_LIMITED_FIELDS",
    "AuthFailure",
    "Authorize",
    "Refusal",
    "actor_of",
    "authenticate",
    "decide",
    "mark_audited",
    "success_audit",
]
