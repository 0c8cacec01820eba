"""Validation remembered per parsed document (``RememberedValidation``): the same errors as
strawberry's ``ValidationCache`` at every request, a document validated once, and a new
text, or another schema and rules, validated again."""

from __future__ import annotations

from typing import Any, ClassVar

import strawberry
from graphql import ValidationRule
from strawberry.extensions import (
    AddValidationRules,
    ParserCache,
    QueryDepthLimiter,
    ValidationCache,
)

from backfiller.resolvers.document_memo import DocumentMemo
from backfiller.resolvers.remembered_validation import RememberedValidation


class Counting(ValidationRule):
    """A rule that counts the validations it takes part in."""

    runs: ClassVar[int] = 0

    def __init__(self, context: Any) -> None:
        super().__init__(context)
        Counting.runs += 1


class Other(ValidationRule):
    """A second rule set's extra rule (does nothing)."""


@strawberry.type
class Node:
    name: str

    @strawberry.field
    def child(self) -> Node:
        return Node(name=self.name + "!")


@strawberry.type
class Query:
    @strawberry.field
    def root(self) -> Node:
        return Node(name="r")


def _schema(validation: Any, rules: list[Any]) -> strawberry.Schema:
    depth = QueryDepthLimiter(max_depth=3).validation_rules
    return strawberry.Schema(
        query=Query,
        extensions=[
            lambda: AddValidationRules([*depth, *rules]),
            lambda: ParserCache(maxsize=64),
            validation,
        ],
    )


QUERIES = [
    "{ root { name } }",
    "{ root { nope } }",
    "{ root { child { child { child { name } } } } }",
    "query { root { name } } query { root { name } }",
    "{ root { ...F } } fragment F on Node { name child { ...F } }",
]


def _answer(schema: strawberry.Schema, query: str) -> tuple[Any, list[str]]:
    result = schema.execute_sync(query)
    return result.data, sorted(e.message for e in result.errors or [])


def test_the_answers_are_strawberrys_at_every_request() -> None:
    ours = _schema(lambda: RememberedValidation(DocumentMemo(64)), [])
    theirs = _schema(lambda: ValidationCache(maxsize=64), [])
    for _ in range(3):
        for query in QUERIES:
            assert _answer(ours, query) == _answer(theirs, query), query


def test_a_document_is_validated_once_and_a_new_text_or_schema_again() -> None:
    memo = DocumentMemo(64)
    schema = _schema(lambda: RememberedValidation(memo), [Counting])
    before = Counting.runs
    for _ in range(4):
        assert _answer(schema, "{ root { name } }") == ({"root": {"name": "r"}}, [])
    assert Counting.runs == before + 1
    assert _answer(schema, "{ root { child { name } } }")[1] == []
    assert Counting.runs == before + 2
    # The same text under other rules (another schema sharing the memo) is validated again.
    other = _schema(lambda: RememberedValidation(memo), [Counting, Other])
    assert _answer(other, "{ root { name } }") == ({"root": {"name": "r"}}, [])
    assert Counting.runs == before + 3


def test_an_invalid_document_keeps_its_errors() -> None:
    schema = _schema(lambda: RememberedValidation(DocumentMemo(64)), [])
    first = _answer(schema, "{ root { nope } }")
    assert first[0] is None and first[1] and "nope" in first[1][0]
    assert _answer(schema, "{ root { nope } }") == first
