"""The public inputs' Python values, built in one step from what graphql-core coerced.

strawberry turns a mutation's input (a dict keyed by GraphQL names, already coerced and checked
by graphql-core) into its input classes field by field on every request, and for each field it
works its type out again (``StrawberryField.resolve_type``, generic or not) and tries each kind
of type in turn: for ``launchBackfill`` about 13% of the server's CPU per launch. The types are
fixed once the schema is built, so here each input class gets strawberry's own ``from_input``
hook (``StrawberryObjectDefinition.from_input``, strawberry's way for a type to build its own
value), which works out once per field how to convert it:

- a scalar or an enum is taken as graphql-core gave it (as strawberry does);
- a list of those is copied (as strawberry does: graphql-core may share a default list);
- an input class, or a list of them, is built the same way;
- anything else is handed to strawberry's own conversion (``InputContext.convert``).

Fields the client left out keep their Python default; a field with none gets ``None``, as in
strawberry's own conversion.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from typing import Any

from strawberry.schema.compat import is_scalar
from strawberry.types.arguments import InputContext
from strawberry.types.base import (
    StrawberryList,
    StrawberryObjectDefinition,
    StrawberryOptional,
    has_object_definition,
)
from strawberry.types.enum import StrawberryEnumDefinition, has_enum_definition

Convert = Callable[[Any, InputContext, str | int], Any]
"""Converts a non-null value (the value, the enclosing input's context, its GraphQL name or
its index in a list)."""


def build_inputs_directly(schema: Any) -> None:
    """Give every input class of ``schema`` (a strawberry Schema) its one-step builder."""
    for concrete in schema.schema_converter.type_map.values():
        definition = concrete.definition
        is_input = isinstance(definition, StrawberryObjectDefinition) and definition.is_input
        if is_input and definition.from_input is None:
            definition.from_input = _Builder(definition)


class _Builder:
    """``from_input`` of one input class; its plan is made on first use (it needs the
    schema's scalar registry, which comes with the first value)."""

    def __init__(self, definition: StrawberryObjectDefinition) -> None:
        self.definition = definition
        self.plan: list[tuple[str, str, Convert | None]] | None = None
        self.nones: dict[str, None] = {}
        """The fields with no default, None unless given (as strawberry's own conversion)."""

    def __call__(self, cls: type, value: Mapping[str, Any], context: InputContext) -> Any:
        plan = self.plan
        if plan is None:
            plan = self.plan = self._plan(context)
        kwargs: dict[str, Any] = dict(self.nones)
        for graphql_name, python_name, convert in plan:
            if graphql_name in value:
                item = value[graphql_name]
                if convert is not None and item is not None:
                    item = convert(item, context, graphql_name)
                kwargs[python_name] = item
        return cls(**kwargs)

    def _plan(self, context: InputContext) -> list[tuple[str, str, Convert | None]]:
        definition = self.definition
        self.nones = {
            field.python_name: None
            for field in definition.fields
            if field.default_value is dataclasses.MISSING
            and field.default_factory is dataclasses.MISSING
        }
        return [
            (
                context.config.name_converter.from_field(field),
                field.python_name,
                _converter(field.resolve_type(type_definition=definition), context),
            )
            for field in definition.fields
        ]


def _is_leaf(type_: Any, context: InputContext) -> bool:
    return (
        is_scalar(type_, context.scalar_registry)
        or isinstance(type_, StrawberryEnumDefinition)
        or has_enum_definition(type_)
    )


def _converter(type_: Any, context: InputContext) -> Convert | None:
    """How to convert a non-null value of ``type_`` (None: taken as it is)."""
    if isinstance(type_, StrawberryOptional):
        return _converter(type_.of_type, context)
    if _is_leaf(type_, context):
        return None
    if isinstance(type_, StrawberryList):
        inner = _converter(type_.of_type, context)
        if inner is None:
            return lambda value, _context, _name: list(value)
        return _list_of(inner)
    built = has_object_definition(type_) and type_.__strawberry_definition__.from_input
    if isinstance(built, _Builder):
        return lambda value, outer, name: built(type_, value, _inside(outer, name))
    return lambda value, outer, name: outer.convert(value, type_, name)


def _list_of(inner: Convert) -> Convert:
    def convert(value: Any, outer: InputContext, name: str | int) -> list[Any]:
        inside = _inside(outer, name)
        return [None if item is None else inner(item, inside, i) for i, item in enumerate(value)]

    return convert


def _inside(context: InputContext, key: str | int) -> InputContext:
    """The context of a value nested at ``key`` (its path is where an error points)."""
    return InputContext(context.info, context.config, context.scalar_registry, (*context.path, key))
