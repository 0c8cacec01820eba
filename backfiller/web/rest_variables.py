"""Checking the variables of a REST route's operation before running it, with the path of
each bad value as data.

graphql-core reports a bad variable as one message ("Variable '$input' has invalid value at
..."); REST answers need the field of the body or query string instead. So the REST routes
check their variables first, with graphql-core's ``validate_input_value``, which hands over
each problem with its path as a list, and report unknown fields themselves (graphql-core
names them only inside its message). Nothing here reads an error message to find a field.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import graphql
from graphql import (
    GraphQLError,
    GraphQLInputObjectType,
    GraphQLInputType,
    GraphQLList,
    GraphQLNonNull,
    GraphQLSchema,
    OperationDefinitionNode,
)
from graphql.pyutils import did_you_mean, suggestion_list
from graphql.utilities import type_from_ast, validate_input_value

Path = list[str | int]


@dataclass(frozen=True, slots=True)
class VariableProblem:
    """A bad value: its variable, its path inside the variable, and why."""

    variable: str
    path: Path
    message: str


def _unknown_fields(
    value: Any, type_: GraphQLInputType, path: Path
) -> Iterator[tuple[Path, GraphQLInputObjectType]]:
    """The object keys that their type does not define, anywhere in ``value``: each path,
    with the type that lacks it."""
    if isinstance(type_, GraphQLNonNull):
        yield from _unknown_fields(value, type_.of_type, path)
    elif isinstance(type_, GraphQLList):
        if isinstance(value, list):
            for i, item in enumerate(value):
                yield from _unknown_fields(item, type_.of_type, [*path, i])
        else:
            yield from _unknown_fields(value, type_.of_type, path)
    elif isinstance(type_, GraphQLInputObjectType) and isinstance(value, dict):
        for key, item in value.items():
            field = type_.fields.get(key)
            if field is None:
                yield [*path, key], type_
            else:
                yield from _unknown_fields(item, field.type, [*path, key])


def _unknown_message(path: Path, type_: GraphQLInputObjectType) -> str:
    name = str(path[-1])
    suggestion = did_you_mean(suggestion_list(name, list(type_.fields)))
    return f"Expected value of type '{type_}' not to include unknown field '{name}'.{suggestion}"


def _without(value: Any, paths: list[Path]) -> Any:
    """``value`` without the keys at ``paths`` (copied where it changes)."""
    for path in paths:
        value = _drop(value, path)
    return value


def _drop(value: Any, path: Path) -> Any:
    head, rest = path[0], path[1:]
    if isinstance(value, dict):
        if not rest:
            return {k: v for k, v in value.items() if k != head}
        return {**value, head: _drop(value[head], rest)}
    if isinstance(value, list) and isinstance(head, int):
        copied = list(value)
        copied[head] = _drop(value[head], rest) if rest else copied[head]
        return copied
    return value


def _first_sentence(message: str) -> str:
    """graphql-core's message without the echo of the whole value (cosmetic only)."""
    return message.split(", found: ")[0].rstrip(".") + "."


def variable_problems(
    schema: GraphQLSchema, operation: OperationDefinitionNode, variables: dict[str, Any]
) -> list[VariableProblem]:
    """Every bad value in ``variables`` for ``operation``, each with its path."""
    problems: list[VariableProblem] = []
    for definition in operation.variable_definitions or ():
        name = definition.variable.name.value
        type_ = type_from_ast(schema, definition.type)
        assert type_ is not None and graphql.is_input_type(type_)
        value = variables.get(name)
        unknown = list(_unknown_fields(value, type_, []))
        problems += [VariableProblem(name, p, _unknown_message(p, t)) for p, t in unknown]

        def collect(
            error: GraphQLError,
            path: Path,
            name: str = name,
            into: list[VariableProblem] = problems,
        ) -> None:
            into.append(VariableProblem(name, path, _first_sentence(error.message)))

        known = _without(value, [p for p, _ in unknown])
        validate_input_value(known, type_, collect, hide_suggestions=True)
    return problems


__all__ = ["VariableProblem", "variable_problems"]
