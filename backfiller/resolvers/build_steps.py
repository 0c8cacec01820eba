"""graphql-core's ``build`` of an execution (where it coerces the operation's variables), as
steps that mixins of the executor take in turn.

The executor of the API is composed of mixins in one place (``backfiller.api``): one for
security (refusing a mutation before its variables are coerced), others for speed. Those that
change what is built (another document, other variables) override :meth:`BuildStep.step`
rather than ``build`` itself, whose long signature then lives here only: each step calls
``super().step`` with the request it wants built, and may look at what comes back.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from graphql import DocumentNode, GraphQLSchema
from graphql.execution import Executor


@dataclass(frozen=True, slots=True)
class BuildRequest:
    """What a step may change before the execution is built (its variables as received)."""

    schema: GraphQLSchema
    document: DocumentNode
    operation_name: str | None
    variables: dict[str, Any] | None
    context: Any


Build = Callable[[DocumentNode, dict[str, Any] | None], Any]
"""graphql-core's own ``build`` with this document and these variables: an execution
context, or the list of errors of coercing the variables."""


class BuildStep(Executor[Any]):
    """An executor whose ``build`` runs the :meth:`step` of each mixin, outermost first."""

    @classmethod
    def build(
        cls,
        schema: GraphQLSchema,
        document: DocumentNode,
        root_value: Any = None,
        context_value: Any = None,
        raw_variable_values: dict[str, Any] | None = None,
        operation_name: str | None = None,
        *args: Any,
        **kwargs: Any,
    ) -> Any:
        def build(built_document: DocumentNode, variables: dict[str, Any] | None) -> Any:
            return super(BuildStep, cls).build(
                schema,
                built_document,
                root_value,
                context_value,
                variables,
                operation_name,
                *args,
                **kwargs,
            )

        request = BuildRequest(schema, document, operation_name, raw_variable_values, context_value)
        return cls.step(request, build)

    @classmethod
    def step(cls, request: BuildRequest, build: Build) -> Any:
        """Build ``request`` (a mixin overrides this and calls ``super().step``)."""
        return build(request.document, request.variables)


__all__ = ["Build", "BuildRequest", "BuildStep"]
