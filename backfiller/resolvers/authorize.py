"""The ``Authorize`` schema extension: every root field checked against the policy, in one place.

- Before execution (so before any variable is coerced), the root fields of a query or a
  subscription are looked up in :data:`~backfiller.resolvers.policy.FIELD_ROLES`: a refused
  field answers with a top-level error whose ``extensions.code`` says why. A mutation whose
  every root field is refused by role is answered with its payloads before coercion too, by
  :class:`~backfiller.resolvers.authorize_early.AuthorizingExecutor`.
- Then, as each root field resolves: the role again, unstorable text, the scopes of the
  token (:mod:`~backfiller.resolvers.scopes`) and the per-token rate limit. Refused
  mutations answer with their payload and ``userErrors`` (its other fields empty), like any
  expected failure, and every mutation, allowed or refused, is recorded in the audit log.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Iterator
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
from strawberry.types.base import StrawberryList, StrawberryOptional

from backfiller.resolvers.audit import record, result_of, subject_of
from backfiller.resolvers.context import AuditDraft, Context, PublicError
from backfiller.resolvers.policy import Refusal, decide, rate_refusal
from backfiller.resolvers.rate_keys import rate_caller
from backfiller.resolvers.sanitize import check_text
from backfiller.resolvers.scopes import scope_refusal_of
from backfiller.root_fields import RootFieldExtension
from backfiller.schema.common import UserError, UserErrorCode
from backfiller.storage.auth_records import AuditOutcome

_ROOTS = {
    OperationType.QUERY: "Query",
    OperationType.MUTATION: "Mutation",
    OperationType.SUBSCRIPTION: "Subscription",
}


_ACCESS_CODES = frozenset({UserErrorCode.FORBIDDEN, UserErrorCode.UNAUTHENTICATED})


class Authorize(RootFieldExtension):
    """Check every root field against the policy; audit every mutation."""

    def on_execute(self) -> Iterator[None]:
        self._check_before_execution()
        yield

    def _check_before_execution(self) -> None:
        execution = self.execution_context
        document = execution.graphql_document
        operation = operation_of(document, execution.operation_name)
        ctx = execution.context
        if operation is None or not isinstance(ctx, Context):
            return
        root = _ROOTS[operation.operation]
        fields = root_fields(operation.selection_set, document)
        if root == "Mutation":
            return
        for field in fields:
            refusal = decide(ctx.principal, root, field.name.value)
            if refusal is not None:
                key = field.alias.value if field.alias else field.name.value
                error = PublicError(refusal.message, code=refusal.code.name)
                error.path, error.nodes = [key], [field]
                raise error

    def resolve_root(
        self,
        _next: Callable[..., Any],
        root: Any,
        info: GraphQLResolveInfo[Context],
        *args: Any,
        **kwargs: Any,
    ) -> Any:
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
        return _mutate(_next, root, info, refusal, args, kwargs)


async def _mutate(
    _next: Callable[..., Any],
    root: Any,
    info: GraphQLResolveInfo[Context],
    refusal: Refusal | None,
    args: tuple[Any, ...],
    kwargs: dict[str, Any],
) -> Any:
    ctx: Context = info.context
    field = info.field_name
    subject = subject_of(kwargs)
    ctx.audit = draft = AuditDraft(field, subject)
    outcome = AuditOutcome.DENIED
    if refusal is None:
        refusal, outcome = check_text(kwargs), AuditOutcome.REJECTED
    if refusal is None:
        refusal, outcome = await scope_refusal_of(ctx, field, kwargs), AuditOutcome.DENIED
    if refusal is None:
        limiter, settings = ctx.services.rate_limiter, ctx.services.settings
        caller = rate_caller(ctx.principal, ctx.client)
        refusal = rate_refusal(limiter, settings, caller, field, ctx.now())
    if refusal is not None:
        payload = refusal_payload(info, refusal, kwargs)
        await record(ctx, field, subject, outcome, [refusal], None)
        return payload
    try:
        result = _next(root, info, *args, **kwargs)
        if inspect.isawaitable(result):
            result = await result
    except Exception:
        message = f"unexpected error (request {ctx.request_id})"
        await record(ctx, field, subject, AuditOutcome.FAILED, [], message)
        raise
    if draft.written:
        return result
    errors: list[UserError] = list(getattr(result, "user_errors", None) or [])
    outcome = AuditOutcome.REJECTED if errors else AuditOutcome.SUCCEEDED
    if any(e.code in _ACCESS_CODES for e in errors):
        outcome = AuditOutcome.DENIED  # e.g. an asset outside the token's scope
    await record(ctx, field, subject, outcome, errors, result_of(result))
    return result


def operation_of(document: Any, name: str | None) -> OperationDefinitionNode | None:
    if document is None:
        return None
    operations = [d for d in document.definitions if isinstance(d, OperationDefinitionNode)]
    for op in operations:
        if name is None or (op.name is not None and op.name.value == name):
            return op
    return None


def root_fields(selection_set: SelectionSetNode, document: Any, depth: int = 0) -> list[FieldNode]:
    """The root fields an operation selects, through fragments."""
    if depth > 20:
        return []
    fragments = {
        d.name.value: d for d in document.definitions if isinstance(d, FragmentDefinitionNode)
    }
    found: list[FieldNode] = []
    for selection in selection_set.selections:
        if isinstance(selection, FieldNode):
            found.append(selection)
        elif isinstance(selection, InlineFragmentNode):
            found += root_fields(selection.selection_set, document, depth + 1)
        elif isinstance(selection, FragmentSpreadNode):
            fragment = fragments.get(selection.name.value)
            if fragment is not None:
                found += root_fields(fragment.selection_set, document, depth + 1)
    return found


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
