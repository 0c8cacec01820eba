"""Plain fields below the root, read without graphql-core's per-field machinery.

graphql-core executes every field the same way: it wraps the resolver in the middleware
chain, builds a resolve info, calls the resolver (strawberry's, which calls ``getattr``),
then walks the return type to complete the value. A page of 100 backfills has about 1,200
fields, nearly all of them plain attributes of the public types (``id``, ``status``,
``counts { total }``): that walk was about two thirds of the page's time.

:class:`PlainFieldsMixin` reads a *plain* field below the root directly: a scalar or an
enum is read and serialized in the loop over its object's fields, an object is read and its
selection executed. A field is plain when strawberry itself resolves it as a basic field (no
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

import weakref
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from graphql import (
    GraphQLField,
    GraphQLNonNull,
    GraphQLObjectType,
    GraphQLOutputType,
    GraphQLSchema,
    get_nullable_type,
    is_leaf_type,
    is_non_null_type,
    is_object_type,
)
from graphql.execution import Executor
from graphql.execution.executor import to_nodes
from graphql.pyutils import Path, Undefined, gather_with_cancel
from graphql.type.scalars import (
    GRAPHQL_MAX_INT,
    GRAPHQL_MIN_INT,
    serialize_id,
    serialize_int,
    serialize_string,
)
from strawberry.schema.schema_converter import GraphQLCoreConverter

from backfiller.root_fields import root_fields_only

_DIRECTIVES_OF_COLLECTION = frozenset({"skip", "include"})
_UNCHANGED: dict[Any, type] = {serialize_string: str, serialize_id: str, serialize_int: int}
"""graphql-core's serializers that return a value of this exact type as it is (an int, once
it is within 32 bits)."""


@dataclass(frozen=True, slots=True)
class PlainField:
    """How to read and complete one plain field."""

    field_def: GraphQLField
    read: Any
    """The resolver strawberry would call: ``read(source, name)``."""
    name: str
    return_type: GraphQLOutputType
    nullable: bool
    leaf: bool
    """A scalar or an enum: serialized by ``coerce`` (``named.coerce_output_value``)."""
    coerce: Any
    same: type | None
    """A type whose values ``coerce`` returns unchanged (``str`` for String and ID, ``int`` for
    Int within 32 bits): such a value is taken as it is."""
    plain_object: bool
    """An object type without ``is_type_of``: its selection runs without a resolve info."""
    named: Any
    """The nullable type: a leaf type, an object type, or anything (completed as usual)."""


def plain_field(field_def: GraphQLField | None) -> PlainField | None:
    """How to read the field, if its definition is plain (see the module's docstring)."""
    if field_def is None or field_def.args or not getattr(field_def.resolve, "_is_default", False):
        return None
    definition = field_def.extensions.get(GraphQLCoreConverter.DEFINITION_BACKREF)
    if definition is None or not definition.is_basic_field:
        return None
    named = get_nullable_type(field_def.type)
    return PlainField(
        field_def=field_def,
        read=definition.default_resolver,
        name=definition.python_name,
        return_type=field_def.type,
        nullable=not is_non_null_type(field_def.type),
        leaf=is_leaf_type(named),
        coerce=named.coerce_output_value if is_leaf_type(named) else None,
        same=_UNCHANGED.get(getattr(named, "coerce_output_value", None)),
        plain_object=is_object_type(named) and named.is_type_of is None,
        named=named,
    )


def selected_plainly(field_details_list: Any) -> bool:
    """Whether every node of the field is selected with no argument and no directive but
    ``@skip``/``@include`` (which graphql-core applied when it collected the fields)."""
    for details in field_details_list:
        node = details.node
        if node.arguments:
            return False
        for directive in node.directives or ():
            if directive.name.value not in _DIRECTIVES_OF_COLLECTION:
                return False
    return True


_Selected = tuple[str, Any, PlainField | None]

# The plain fields of each schema's types, by the identity of the field's definition (which
# lives as long as its schema).
_definitions: weakref.WeakKeyDictionary[GraphQLSchema, dict[int, PlainField | None]] = (
    weakref.WeakKeyDictionary()
)


class PlainFieldsMixin(Executor[Any]):
    """An executor's mixin that reads plain fields below the root in one step (composed
    before strawberry's executor: it reads strawberry's field definitions)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        manager = self.middleware_manager
        self.plain_fields_on = manager is None or root_fields_only(manager.middlewares)
        self._definitions = _definitions.setdefault(self.schema, {})
        # Keyed by the identity of a field's group of nodes (or of an object's collected
        # fields), which graphql-core collects once per parent field and reuses for every
        # item of a list; each is kept alive with its entry, so that its id is not reused.
        self._plain: dict[int, tuple[Any, GraphQLObjectType, PlainField | None]] = {}
        self._objects: dict[int, tuple[Any, GraphQLObjectType, list[_Selected]]] = {}

    def _plain_field(
        self, parent_type: GraphQLObjectType, field_details_list: Any
    ) -> PlainField | None:
        entry = self._plain.get(id(field_details_list))
        if entry is None or entry[1] is not parent_type:
            field_def = parent_type.fields.get(field_details_list[0].node.name.value)
            key = id(field_def)
            if key in self._definitions:
                plan = self._definitions[key]
            else:
                plan = self._definitions[key] = plain_field(field_def)
            if plan is not None and not selected_plainly(field_details_list):
                plan = None
            entry = (field_details_list, parent_type, plan)
            self._plain[id(field_details_list)] = entry
        return entry[2]

    def _selected(self, parent_type: GraphQLObjectType, grouped_field_set: Any) -> list[_Selected]:
        """Each field of the group with its plan (None unless plain), once per request."""
        entry = self._objects.get(id(grouped_field_set))
        if entry is None or entry[1] is not parent_type:
            selected = [
                (name, details, self._plain_field(parent_type, details))
                for name, details in grouped_field_set.items()
            ]
            entry = (grouped_field_set, parent_type, selected)
            self._objects[id(grouped_field_set)] = entry
        return entry[2]

    def execute_fields(  # long: the loop over an object's fields reads its leaves inline
        self,
        parent_type: GraphQLObjectType,
        source_value: Any,
        path: Path | None,
        grouped_field_set: Any,
        position_context: Any,
    ) -> Any:
        """As graphql-core's, but a plain leaf (a scalar or an enum) is read and serialized
        right here; on anything unusual (an exception, a null for a non-null field), the
        field runs through :meth:`execute_field`, which reports it as graphql-core does."""
        if path is None or not self.plain_fields_on:
            return super().execute_fields(
                parent_type, source_value, path, grouped_field_set, position_context
            )
        selected = self._selected(parent_type, grouped_field_set)
        results: dict[str, Any] = {}
        awaitable_fields: list[str] = []
        is_awaitable, typename, position = self.is_awaitable, parent_type.name, position_context
        try:
            for name, details, plan in selected:
                if plan is not None and plan.leaf:
                    try:
                        value = plan.read(source_value, plan.name)
                        if value is None:
                            if plan.nullable:
                                results[name] = None
                                continue
                        elif (plan.same is str and value.__class__ is str) or (
                            plan.same is int
                            and value.__class__ is int
                            and GRAPHQL_MIN_INT <= value <= GRAPHQL_MAX_INT
                        ):
                            results[name] = value
                            continue
                        else:
                            coerced = plan.coerce(value)
                            if coerced is not None and coerced is not Undefined:
                                results[name] = coerced
                                continue
                    except Exception:  # reported by graphql-core's path, below
                        pass
                    result = self.execute_field(
                        parent_type, source_value, details, Path(path, name, typename), position
                    )
                elif plan is not None and plan.plain_object:
                    field_path = Path(path, name, typename)
                    result = self._execute_object(
                        parent_type, plan, source_value, details, field_path, position
                    )
                else:
                    result = self.execute_field(
                        parent_type, source_value, details, Path(path, name, typename), position
                    )
                if result is not Undefined:
                    results[name] = result
                    if type(result) is not dict and is_awaitable(result):
                        awaitable_fields.append(name)
        except Exception:
            if awaitable_fields:  # as graphql-core: settle what other fields started
                self.settle_in_background([results[name] for name in awaitable_fields])
            raise
        if not awaitable_fields:
            return results
        return _gathered(results, awaitable_fields)

    def _execute_object(
        self,
        parent_type: GraphQLObjectType,
        plan: PlainField,
        source: Any,
        field_details_list: Any,
        path: Path,
        position: Any,
    ) -> Any:
        """A plain field of an object type without a type check: its selection, executed
        (``execute_field`` then ``complete_object_value``, in one step); a null or an
        exception of the read goes graphql-core's way."""
        try:
            value = plan.read(source, plan.name)
        except Exception:
            value = None
        if value is None:
            return self.execute_field(parent_type, source, field_details_list, path, position)
        return self._completed(
            lambda: self.collect_and_execute_subfields(
                plan.named, field_details_list, path, value, position
            ),
            plan,
            field_details_list,
            path,
        )

    def execute_field(
        self,
        parent_type: GraphQLObjectType,
        source: Any,
        field_details_list: Any,
        path: Path,
        position_context: Any = None,
    ) -> Any:
        """A plain field is read without middleware nor resolver; its value is completed by
        graphql-core (a list, an object with a type check, or a null or unusual value)."""
        plan = (
            self._plain_field(parent_type, field_details_list)
            if path.prev is not None and self.plain_fields_on
            else None
        )
        if plan is None:
            return super().execute_field(
                parent_type, source, field_details_list, path, position_context
            )

        def complete() -> Any:
            value = plan.read(source, plan.name)
            info = self.build_resolve_info(
                plan.field_def, to_nodes(field_details_list), parent_type, path
            )
            if self.is_awaitable(value):  # completed, its errors handled, by graphql-core
                return self.complete_awaitable_value(
                    plan.return_type, field_details_list, info, path, value, position_context
                )
            return self.complete_value(
                plan.return_type, field_details_list, info, path, value, position_context
            )

        return self._completed(complete, plan, field_details_list, path)

    def _completed(
        self, complete: Callable[[], Any], plan: PlainField, field_details_list: Any, path: Path
    ) -> Any:
        """``complete()``'s value; an exception it raises, now or once awaited, is the field's
        error (reported at ``path``, the field null) as graphql-core reports it."""
        try:
            completed = complete()
        except Exception as error:
            self.handle_field_error(error, plan.return_type, field_details_list, path)
            return None
        if type(completed) is not dict and self.is_awaitable(completed):
            return self._await_completed(completed, plan, field_details_list, path)
        return completed

    def complete_value(
        self,
        return_type: GraphQLOutputType,
        field_details_list: Any,
        info: Any,
        path: Path,
        result: Any,
        position_context: Any,
    ) -> Any:
        """graphql-core's, straight to the object for a value of an object type (an object
        is never null once completed, so its non-null wrapper has nothing to check)."""
        if result is not None and result is not Undefined and not isinstance(result, Exception):
            named = return_type.of_type if isinstance(return_type, GraphQLNonNull) else return_type
            if is_object_type(named):
                return self.complete_object_value(
                    named, field_details_list, info, path, result, position_context
                )
        return super().complete_value(
            return_type, field_details_list, info, path, result, position_context
        )

    async def _await_completed(
        self, completed: Awaitable[Any], plan: PlainField, field_details_list: Any, path: Path
    ) -> Any:
        try:
            return await completed
        except Exception as error:
            self.handle_field_error(error, plan.return_type, field_details_list, path)
            return None


async def _gathered(results: dict[str, Any], awaitable_fields: list[str]) -> dict[str, Any]:
    """The results with their awaitables awaited side by side (as graphql-core)."""
    if len(awaitable_fields) == 1:
        name = awaitable_fields[0]
        results[name] = await results[name]
        return results
    awaited = await gather_with_cancel(*(results[name] for name in awaitable_fields))
    results.update(zip(awaitable_fields, awaited, strict=True))
    return results


__all__ = ["PlainField", "PlainFieldsMixin", "plain_field", "selected_plainly"]
