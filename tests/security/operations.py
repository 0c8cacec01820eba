"""One valid operation for any root field, generated from the schema (for the matrix tests).

Required arguments get a value of their type; the selection asks for ``__typename`` and, on
mutation payloads, ``userErrors { code message }``. Tests override the variables of the fields
they know, so that the allowed calls really do their work.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from graphql import (
    GraphQLEnumType,
    GraphQLField,
    GraphQLInputObjectType,
    GraphQLInputType,
    GraphQLList,
    GraphQLNonNull,
    GraphQLObjectType,
    GraphQLScalarType,
    get_named_type,
)
from graphql.pyutils import Undefined

from backfiller.api import schema

SCALARS: dict[str, Any] = {
    "String": "x",
    "ID": "bf_1",
    "Int": 1,
    "Float": 1.0,
    "Boolean": True,
    "DateTime": "2030-01-01T00:00:00+00:00",
    "JSON": {},
}


@dataclass(frozen=True)
class Operation:
    root: str
    field: str
    document: str
    variables: dict[str, Any]


def sample_value(type_: GraphQLInputType) -> Any:
    if isinstance(type_, GraphQLNonNull):
        return sample_value(type_.of_type)
    if isinstance(type_, GraphQLList):
        return [sample_value(type_.of_type)]
    if isinstance(type_, GraphQLEnumType):
        return next(iter(type_.values))
    if isinstance(type_, GraphQLScalarType):
        return SCALARS.get(type_.name, "x")
    assert isinstance(type_, GraphQLInputObjectType)
    definition = type_.extensions.get("strawberry-definition")
    if getattr(type_, "is_one_of", False) or getattr(definition, "is_one_of", False):
        name, field = next(iter(type_.fields.items()))
        return {name: sample_value(field.type)}
    return {
        name: sample_value(field.type)
        for name, field in type_.fields.items()
        if isinstance(field.type, GraphQLNonNull) and field.default_value is Undefined
    }


def _selection(field: GraphQLField) -> str:
    named = get_named_type(field.type)
    if not isinstance(named, GraphQLObjectType):
        return "" if not hasattr(named, "fields") else " { __typename }"
    if "userErrors" in named.fields:
        return " { __typename userErrors { code message } }"
    return " { __typename }"


def operation_for(root: str, name: str, variables: dict[str, Any] | None = None) -> Operation:
    graphql_schema = schema._schema
    root_type = {
        "Query": graphql_schema.query_type,
        "Mutation": graphql_schema.mutation_type,
        "Subscription": graphql_schema.subscription_type,
    }[root]
    assert root_type is not None
    field = root_type.fields[name]
    given = dict(variables or {})
    declared: list[str] = []
    passed: list[str] = []
    values: dict[str, Any] = {}
    for arg_name, arg in field.args.items():
        required = isinstance(arg.type, GraphQLNonNull) and arg.default_value is Undefined
        if arg_name not in given and not required:
            continue
        declared.append(f"${arg_name}: {arg.type}")
        passed.append(f"{arg_name}: ${arg_name}")
        values[arg_name] = given[arg_name] if arg_name in given else sample_value(arg.type)
    keyword = {"Query": "query", "Mutation": "mutation", "Subscription": "subscription"}[root]
    head = f"{keyword} Probe({', '.join(declared)})" if declared else f"{keyword} Probe"
    call = f"{name}({', '.join(passed)})" if passed else name
    return Operation(root, name, f"{head} {{ {call}{_selection(field)} }}", values)


def all_root_fields(*roots: str) -> list[tuple[str, str]]:
    graphql_schema = schema._schema
    found: list[tuple[str, str]] = []
    for root, type_ in (
        ("Query", graphql_schema.query_type),
        ("Mutation", graphql_schema.mutation_type),
        ("Subscription", graphql_schema.subscription_type),
    ):
        if type_ is not None and root in roots:
            found += [(root, name) for name in type_.fields]
    return found
