"""REST finds the field of a bad value from graphql-core's structured paths, not its wording."""

from __future__ import annotations

from typing import Any

import graphql
import pytest

from backfiller.web.rest_variables import variable_problems

SDL = """
input TagInput { key: String! value: String! }
input Target { job: String }
input LaunchInput { target: Target! tags: [TagInput!] title: String first: Int }
type Query { ok: Boolean }
type Mutation { launch(input: LaunchInput!): Boolean }
"""
SCHEMA = graphql.build_schema(SDL)
OPERATION = graphql.parse("mutation Launch($input: LaunchInput!) { launch(input: $input) }")


def problems(value: Any) -> list[tuple[str, list[str | int]]]:
    [definition] = OPERATION.definitions
    assert isinstance(definition, graphql.OperationDefinitionNode)
    return [(p.variable, p.path) for p in variable_problems(SCHEMA, definition, {"input": value})]


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ({"target": {}}, []),
        ({"target": {}, "colour": 1}, [("input", ["colour"])]),
        ({"target": {"job": "j", "asset": 1}}, [("input", ["target", "asset"])]),
        (
            {"target": {}, "tags": [{"key": "k", "value": "v", "x": 1}]},
            [("input", ["tags", 0, "x"])],
        ),
        ({"target": {}, "tags": [{"key": 1, "value": "v"}]}, [("input", ["tags", 0, "key"])]),
        ({"target": {}, "first": 2**40}, [("input", ["first"])]),
        ({}, [("input", [])]),
        ({"target": {}, "colour": 1, "title": 5}, [("input", ["colour"]), ("input", ["title"])]),
    ],
)
def test_each_bad_value_comes_with_its_path(value: Any, expected: list[Any]) -> None:
    assert problems(value) == expected
