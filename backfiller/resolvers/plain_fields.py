"""Plain fields below the root, read without graphql-core's per-field machinery.

graphql-core executes every field the same way: it wraps the resolver in the middleware
chain, builds a resolve info, calls the resolver (strawberry's, which calls ``getattr``),
then walks the return type to complete the value. A page of 100 backfills has about 1,200
fields, nearly all of them plain attributes of the public types (``id``, ``status``,
``counts { total }``): that walk was three quarters of the page's time.

:class:`PlainFieldsExecutor` reads a *plain* field below the root directly and completes it
in one step. A field is plain when strawberry itself resolves it as a basic field (no
resolver, no field extension such as ``permission_classes``, no exception handler: the
resolver strawberry marks ``_is_default``), it takes no argument and carries no directive
but ``@skip``/``@include``; and only while every middleware of the request is a
:class:`~backfiller.root_fields.RootFieldExtension`, which does nothing below the root. Root
fields, fields with resolvers and everything else take graphql-core's own path, and so does
any value that is not plainly right (null in a non-null field, a leaf that does not
serialize, an object whose type check fails): the error is then reported exactly as
graphql-core reports it, with its path, in ``errors``.
"""

from __future__ import annotations

from collections.abc import Awaitable
from dataclasses import dataclass
from typing import Any

from graphql import (
    GraphQLField,
    GraphQLObjectType,
    GraphQLOutputType,
    get_nullable_type,
    is_leaf_type,
    is_non_null_type,
    is_object_type,
)
from graphql.execution.executor import to_nodes
from graphql.pyutils import Path
from strawberry.schema.schema import StrawberryGraphQLCoreExecutionContext
from strawberry.schema.schema_converter import GraphQLCoreConverter

from backfiller.root_fields import root_fields_only

_LEAF, _OBJECT, _OTHER = 0, 1, 2
_DIRECTIVES_OF_COLLECTION = frozenset({"skip", "include"})


@dataclass(frozen=True, slots=True)
class PlainField:
    """How to read and complete one plain field of one parent type."""

    field_def: GraphQLField
    read: Any
    """The resolver strawberry would call: ``read(source, name)``."""
    name: str
    return_type: GraphQLOutputType
    nullable: bool
    kind: int
    named: Any
    """The nullable type: a leaf type, an object type, or anything (completed as usual)."""


def plain_field(field_def: GraphQLField | None, field_details_list: Any) -> PlainField | None:
    """How to read the field, if it is plain (see the module's docstring); else None."""
    if field_def is None or field_def.args or not getattr(field_def.resolve, "_is_default", False):
        return None
    definition = field_def.extensions.get(GraphQLCoreConverter.DEFINITION_BACKREF)
    if definition is None or not definition.is_basic_field:
        return None
    for details in field_details_list:
        node = details.node
        if node.arguments or any(
            d.name.value not in _DIRECTIVES_OF_COLLECTION for d in node.directives or ()
        ):
            return None
    return_type = field_def.type
    named = get_nullable_type(return_type)
    kind = _LEAF if is_leaf_type(named) else _OBJECT if is_object_type(named) else _OTHER
    return PlainField(
        field_def=field_def,
        read=definition.default_resolver,
        name=definition.python_name,
        return_type=return_type,
        nullable=not is_non_null_type(return_type),
        kind=kind,
        named=named,
    )


class PlainFieldsExecutor(StrawberryGraphQLCoreExecutionContext):
    """graphql-core's executor, which reads plain fields below the root in one step."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        manager = self.middleware_manager
        self.plain_fields_on = manager is None or root_fields_only(manager.middlewares)
        # Keyed by the identity of the field's group of nodes, which graphql-core collects
        # once per parent field and reuses for every item of a list; the group is kept
        # alive with its entry, so that its id is not reused during the request.
        self._plain: dict[int, tuple[Any, GraphQLObjectType, PlainField | None]] = {}

    def execute_field(
        self,
        parent_type: GraphQLObjectType,
        source: Any,
        field_details_list: Any,
        path: Path,
        position_context: Any = None,
    ) -> Any:
        if path.prev is None or not self.plain_fields_on:
            return super().execute_field(
                parent_type, source, field_details_list, path, position_context
            )
        entry = self._plain.get(id(field_details_list))
        if entry is None or entry[1] is not parent_type:
            name = field_details_list[0].node.name.value
            field_def = self.schema.get_field(parent_type, name)
            entry = (field_details_list, parent_type, plain_field(field_def, field_details_list))
            self._plain[id(field_details_list)] = entry
        plan = entry[2]
        if plan is None:
            return super().execute_field(
                parent_type, source, field_details_list, path, position_context
            )
        try:
            value = plan.read(source, plan.name)
        except Exception as error:
            self.handle_field_error(error, plan.return_type, field_details_list, path)
            return None
        if plan.kind == _LEAF:
            if value is None and plan.nullable:
                return None
            if value is not None:
                try:
                    return self.complete_leaf_value(plan.named, value)
                except Exception as error:
                    self.handle_field_error(error, plan.return_type, field_details_list, path)
                    return None
        elif plan.kind == _OBJECT and value is not None:
            is_type_of = plan.named.is_type_of
            if (
                is_type_of is None
                or is_type_of(value, self._info(plan, parent_type, field_details_list, path))
                is True
            ):
                return self._complete_object(
                    plan, field_details_list, path, value, position_context
                )
        return self._complete(plan, parent_type, field_details_list, path, value, position_context)

    def _complete_object(
        self, plan: PlainField, field_details_list: Any, path: Path, value: Any, position: Any
    ) -> Any:
        """An object's selection, as ``complete_object_value`` runs it once the type holds."""
        try:
            completed = self.collect_and_execute_subfields(
                plan.named, field_details_list, path, value, position
            )
        except Exception as error:
            self.handle_field_error(error, plan.return_type, field_details_list, path)
            return None
        if self.is_awaitable(completed):
            return self._await_completed(completed, plan, field_details_list, path)
        return completed

    def _complete(
        self,
        plan: PlainField,
        parent_type: GraphQLObjectType,
        field_details_list: Any,
        path: Path,
        value: Any,
        position: Any,
    ) -> Any:
        """graphql-core's completion of a resolved value, with its resolve info."""
        info = self._info(plan, parent_type, field_details_list, path)
        try:
            if self.is_awaitable(value):
                return self.complete_awaitable_value(
                    plan.return_type, field_details_list, info, path, value, position
                )
            completed = self.complete_value(
                plan.return_type, field_details_list, info, path, value, position
            )
        except Exception as error:
            self.handle_field_error(error, plan.return_type, field_details_list, path)
            return None
        if self.is_awaitable(completed):
            return self._await_completed(completed, plan, field_details_list, path)
        return completed

    def _info(
        self, plan: PlainField, parent_type: GraphQLObjectType, field_details_list: Any, path: Path
    ) -> Any:
        return self.build_resolve_info(
            plan.field_def, to_nodes(field_details_list), parent_type, path
        )

    async def _await_completed(
        self, completed: Awaitable[Any], plan: PlainField, field_details_list: Any, path: Path
    ) -> Any:
        try:
            return await completed
        except Exception as error:
            self.handle_field_error(error, plan.return_type, field_details_list, path)
            return None


__all__ = ["PlainField", "PlainFieldsExecutor", "plain_field"]
