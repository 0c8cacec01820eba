"""Mutations refused by role before any of their variables is coerced.

graphql-core coerces an operation's variables before it resolves a single field, so a caller
refused a mutation could still make the server coerce a large input (and read the coercion's
errors). :class:`AuthorizingMixin` asks the policy first: when every root field of a
mutation is refused to the caller by role (a viewer's ``launchBackfill``, an operator's
``createApiToken``), no variable is coerced (but those that ``@skip``/``@include`` read, a
Boolean each), no argument is read, and each field answers with its payload carrying the
refusal, as :class:`~backfiller.resolvers.authorize.Authorize` answers it after coercion. The
audit log records the refusal, with the subject as the caller named it, uncoerced.

A mutation with at least one allowed root field is coerced as usual: its caller may run it,
and ``Authorize`` refuses the others field by field. Queries and subscriptions are refused by
``Authorize`` before execution, so before coercion too.

A security feature, it stands alone: the API's executor (``backfiller.api``) composes it with
the speed mixins when they are on, and with graphql-core's executor alone when they are off.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from graphql import (
    DocumentNode,
    FieldNode,
    GraphQLObjectType,
    GraphQLResolveInfo,
    OperationDefinitionNode,
    OperationType,
    VariableNode,
    Visitor,
    visit,
)
from graphql.execution.executor import to_nodes
from graphql.pyutils import Path
from graphql.utilities import value_from_ast_untyped

from backfiller.resolvers.audit import record, subject_of
from backfiller.resolvers.authorize import operation_of, refusal_payload, root_fields
from backfiller.resolvers.build_steps import Build, BuildRequest, BuildStep
from backfiller.resolvers.context import AuditDraft, Context
from backfiller.resolvers.policy import Refusal, decide
from backfiller.storage.auth_records import AuditOutcome


class AuthorizingMixin(BuildStep):
    """An executor's mixin that answers a wholly refused mutation without coercion."""

    refusals: dict[str, Refusal]
    raw_variables: dict[str, Any]

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.refusals = {}
        self.raw_variables = {}

    @classmethod
    def step(cls, request: BuildRequest, build: Build) -> Any:
        refusals = refusals_before_coercion(
            request.document, request.operation_name, request.context
        )
        if not refusals:
            return super().step(request, build)
        raw = request.variables if isinstance(request.variables, dict) else {}
        stripped, kept = _without_variables(request.document, request.operation_name)
        variables = {name: raw[name] for name in kept if name in raw}
        built = super().step(
            dataclasses.replace(request, document=stripped, variables=variables), build
        )
        if isinstance(built, AuthorizingMixin):
            built.refusals, built.raw_variables = refusals, raw
        return built

    def execute_field(
        self,
        parent_type: GraphQLObjectType,
        source: Any,
        field_details_list: Any,
        path: Path,
        position_context: Any = None,
    ) -> Any:
        if path.prev is not None or not self.refusals:
            return super().execute_field(
                parent_type, source, field_details_list, path, position_context
            )
        node: FieldNode = field_details_list[0].node
        refusal = self.refusals.get(node.name.value)
        if refusal is None:
            return super().execute_field(
                parent_type, source, field_details_list, path, position_context
            )
        field_def = self.schema.get_field(parent_type, node.name.value)
        assert field_def is not None  # validated
        info = self.build_resolve_info(field_def, to_nodes(field_details_list), parent_type, path)
        given = {
            argument.name.value: value_from_ast_untyped(argument.value, self.raw_variables)
            for argument in node.arguments or ()
        }
        refused = _refuse(info, refusal, given)
        return self.complete_awaitable_value(
            field_def.type, field_details_list, info, path, refused, position_context
        )


def refusals_before_coercion(
    document: DocumentNode | None, operation_name: str | None, ctx: Any
) -> dict[str, Refusal]:
    """Each root field of the mutation with its refusal, when the caller may run none of them
    (``__typename`` aside); empty otherwise."""
    if document is None or not isinstance(ctx, Context):
        return {}
    operation = operation_of(document, operation_name)
    if operation is None or operation.operation is not OperationType.MUTATION:
        return {}
    refusals: dict[str, Refusal] = {}
    for field in root_fields(operation.selection_set, document):
        name = field.name.value
        if name == "__typename":
            continue
        refusal = decide(ctx.principal, "Mutation", name)
        if refusal is None:
            return {}
        refusals[name] = refusal
    return refusals


async def _refuse(
    info: GraphQLResolveInfo[Context], refusal: Refusal, given: dict[str, Any]
) -> Any:
    ctx: Context = info.context
    field = info.field_name
    subject = subject_of(given)
    ctx.audit = AuditDraft(field, subject)
    await record(ctx, field, subject, AuditOutcome.DENIED, [refusal], None)
    return refusal_payload(info, refusal, given)


class _DirectiveVariables(Visitor):
    """The variables that directives read (``@skip(if: $x)``): needed to collect fields."""

    def __init__(self) -> None:
        super().__init__()
        self.names: set[str] = set()
        self._inside = 0

    def enter_directive(self, *_: Any) -> None:
        self._inside += 1

    def leave_directive(self, *_: Any) -> None:
        self._inside -= 1

    def enter_variable(self, node: VariableNode, *_: Any) -> None:
        if self._inside:
            self.names.add(node.name.value)


def _without_variables(
    document: DocumentNode, operation_name: str | None
) -> tuple[DocumentNode, set[str]]:
    """The document whose operation declares only the variables its directives read."""
    finder = _DirectiveVariables()
    visit(document, finder)
    operation = operation_of(document, operation_name)
    definitions = []
    for definition in document.definitions:
        if definition is operation and isinstance(definition, OperationDefinitionNode):
            kept = tuple(
                v
                for v in definition.variable_definitions or ()
                if v.variable.name.value in finder.names
            )
            definition = dataclasses.replace(definition, variable_definitions=kept)
        definitions.append(definition)
    return dataclasses.replace(document, definitions=tuple(definitions)), finder.names


__all__ = ["AuthorizingMixin", "refusals_before_coercion"]
