"""Long lists of strings in an operation's variables, coerced in one step.

graphql-core coerces a variable value item by item, and first walks it item by item to check
that it is not nested too deeply: about 1.3 us for each key of a launch's ``keys`` list, more
than half of a 9,000-key launch. A list whose items are all ``str``, where the schema expects
``[String!]`` (or ``[String]``), needs neither walk: each item is already what coercion would
make of it, and a flat list nests no deeper than its type.

:class:`StringListsMixin` sets such lists (:data:`LIFT_AT` items or more, found through
input objects, not inside other lists) aside before graphql-core coerces the variables, lets
it coerce the rest (each set-aside list as an empty one), and puts each list back where
coercion placed it. Anything else (a non-string item, a list of lists, a value that is not a
list) is coerced by graphql-core as usual, with its usual errors. Should a list not find its
place again, the variables are coerced again as received: never a value lost.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from graphql import (
    DocumentNode,
    GraphQLInputObjectType,
    GraphQLInputType,
    GraphQLList,
    GraphQLNonNull,
    GraphQLScalarType,
    GraphQLSchema,
    is_input_type,
)
from graphql.utilities import type_from_ast

from backfiller.resolvers.authorize import operation_of
from backfiller.resolvers.build_steps import Build, BuildRequest, BuildStep

# Shorter lists are coerced by graphql-core: setting them aside would save nothing.
LIFT_AT = 16
# Input objects followed from a variable's value down to a list (deeper values are left alone).
MAX_DEPTH = 8

_Path = tuple[str, ...]


class StringListsMixin(BuildStep):
    """An executor's mixin that coerces long lists of strings in variables in one step."""

    @classmethod
    def step(cls, request: BuildRequest, build: Build) -> Any:
        lifted, aside = set_aside(
            request.schema, request.document, request.operation_name, request.variables
        )
        built = super().step(dataclasses.replace(request, variables=lifted), build)
        # Errors: each set-aside list was valid as it stands. No list set aside: done.
        if not aside or isinstance(built, list):
            return built
        if put_back(built.variable_values, request.variables or {}, aside):
            return built
        return super().step(request, build)  # coerced again, as received


def set_aside(
    schema: GraphQLSchema,
    document: DocumentNode,
    operation_name: str | None,
    variables: dict[str, Any] | None,
) -> tuple[dict[str, Any] | None, dict[str, list[tuple[_Path, list[str]]]]]:
    """The variables with their long lists of strings emptied, and those lists by variable
    and by path (of coerced field names)."""
    operation = operation_of(document, operation_name)
    if operation is None or not isinstance(variables, dict):
        return variables, {}
    lifted = variables
    aside: dict[str, list[tuple[_Path, list[str]]]] = {}
    for definition in operation.variable_definitions or ():
        name = definition.variable.name.value
        if name not in variables:
            continue
        type_ = type_from_ast(schema, definition.type)
        if not is_input_type(type_):  # unknown: validation has refused the operation
            continue
        found: list[tuple[_Path, list[str]]] = []
        value = _lift(variables[name], type_, (), found, 0)
        if found:
            if lifted is variables:
                lifted = dict(variables)
            lifted[name] = value
            aside[name] = found
    return lifted, aside


def put_back(
    values: Any, raw: dict[str, Any], aside: dict[str, list[tuple[_Path, list[str]]]]
) -> bool:
    """Each set-aside list in its place in the coerced ``values``; False if one has none."""
    coerced, sources = values.coerced, values.sources
    for name, found in aside.items():
        for path, items in found:
            holder = coerced
            key: str = name
            for step in path:
                holder = holder.get(key) if isinstance(holder, dict) else None
                key = step
            if not isinstance(holder, dict) or holder.get(key) != []:
                return False
            holder[key] = items
        if name in sources:  # what error messages quote: the value as received
            sources[name] = sources[name]._replace(value=raw[name])
    return True


def _lift(
    value: Any,
    type_: GraphQLInputType,
    path: _Path,
    found: list[tuple[_Path, list[str]]],
    depth: int,
) -> Any:
    if isinstance(type_, GraphQLNonNull):
        type_ = type_.of_type
    if isinstance(type_, GraphQLList):
        item = type_.of_type
        if isinstance(item, GraphQLNonNull):
            item = item.of_type
        if (
            isinstance(item, GraphQLScalarType)
            and item.name == "String"
            and type(value) is list
            and len(value) >= LIFT_AT
            and set(map(type, value)) == {str}
        ):
            found.append((path, value))
            return []
        return value
    if isinstance(type_, GraphQLInputObjectType) and type(value) is dict and depth < MAX_DEPTH:
        copy: dict[str, Any] | None = None
        for name, field_value in value.items():
            field = type_.fields.get(name)
            if field is None:
                continue
            key = field.out_name or name
            new = _lift(field_value, field.type, (*path, key), found, depth + 1)
            if new is not field_value:
                copy = dict(value) if copy is None else copy
                copy[name] = new
        return value if copy is None else copy
    return value


__all__ = ["LIFT_AT", "StringListsMixin", "put_back", "set_aside"]
