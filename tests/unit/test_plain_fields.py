"""The executor's one-step reading of plain fields (``PlainFieldsMixin``): the same answers
and the same errors as graphql-core's own executor, guards kept, and only under root-field
hooks."""

from __future__ import annotations

import enum
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

import pytest
import strawberry
from strawberry.extensions import SchemaExtension
from strawberry.permission import BasePermission
from strawberry.schema.schema import StrawberryGraphQLCoreExecutionContext

from backfiller.api import FastExecutor, SecureExecutor, build_schema
from backfiller.config import Settings
from backfiller.resolvers.authorize_early import AuthorizingMixin
from backfiller.resolvers.build_steps import BuildStep
from backfiller.resolvers.plain_fields import PlainFieldsMixin
from backfiller.resolvers.string_lists import StringListsMixin
from backfiller.root_fields import RootFieldExtension, root_fields_only


@strawberry.enum
class Color(enum.Enum):
    RED = "red"
    BLUE = "blue"


class Deny(BasePermission):
    message = "not for you"

    def has_permission(self, source: Any, info: strawberry.Info, **kwargs: Any) -> bool:
        return False


@strawberry.type
class Counts:
    total: int
    done: int | None
    ratio: float


@strawberry.type
class Item:
    id: strawberry.ID
    name: str
    color: Color
    at: datetime
    note: str | None
    counts: Counts
    maybe: Counts | None
    tags: list[str]
    secret: str = strawberry.field(permission_classes=[Deny], default="hidden")

    @strawberry.field
    def shout(self) -> str:
        return self.name.upper()

    @strawberry.field
    async def later(self) -> str:
        return f"{self.name} later"


@strawberry.type
class Edge:
    cursor: str
    node: Item


@strawberry.type
class Page:
    edges: list[Edge]
    total: int


class Broken:
    """A value whose attribute fails when read, as a bug in a public type's field would."""

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        raise RuntimeError(f"no {name} today")


def item(i: int, **changes: Any) -> Item:
    values: dict[str, Any] = {
        "id": strawberry.ID(f"it_{i}"),
        "name": f"item {i}",
        "color": Color.RED if i % 2 else Color.BLUE,
        "at": datetime(2024, 1, 1, i, tzinfo=UTC),
        "note": None if i % 3 else f"note {i}",
        "counts": Counts(total=i, done=None if i % 2 else i, ratio=i / 3),
        "maybe": None,
        "tags": [f"t{i}", "x"],
    }
    values.update(changes)
    return Item(**values)


PAGE: list[Item] = [item(i) for i in range(5)]


@strawberry.type
class Query:
    @strawberry.field
    def page(self) -> Page:
        return Page(edges=[Edge(cursor=f"c{i.id}", node=i) for i in PAGE], total=len(PAGE))

    @strawberry.field
    def one(self) -> Item | None:
        return PAGE[0]


class PlainFieldsExecutor(PlainFieldsMixin, StrawberryGraphQLCoreExecutionContext):
    """The mixin alone on strawberry's executor."""


def schema(executor: type[Any], extensions: list[Any] | None = None) -> strawberry.Schema:
    return strawberry.Schema(
        query=Query, execution_context_class=executor, extensions=extensions or []
    )


async def answers(query: str, extensions: list[Any] | None = None) -> tuple[Any, Any]:
    """The answer of the fast executor and of strawberry's own, as JSON-like data."""
    fast = await schema(PlainFieldsExecutor, extensions).execute(query)
    plain = await schema(StrawberryGraphQLCoreExecutionContext, extensions).execute(query)
    return _formatted(fast), _formatted(plain)


def _formatted(result: Any) -> Any:
    errors = [(e.message, e.path) for e in result.errors or []]
    return result.data, sorted(errors, key=str)


QUERIES = [
    "{ page { total edges { cursor node { id name color at note tags } } } }",
    "{ page { edges { node { counts { total done ratio } maybe { total } } } } }",
    "{ page { edges { n: node { a: id b: name ...F } } } } fragment F on Item { color shout }",
    "{ page { edges { node { id later ... on Item { counts { __typename total } } } } } }",
    "{ one { id name @skip(if: true) note @include(if: true) counts { done } } }",
    "{ page { edges { node { secret } } } }",
    "{ one { __typename id secret name } }",
]


@pytest.mark.parametrize("query", QUERIES)
async def test_answers_as_graphql_core_does(query: str) -> None:
    fast, plain = await answers(query)
    assert fast == plain
    data, errors = fast
    if "secret" in query:
        assert [path[-1] for _, path in errors] == ["secret"] * len(errors) and errors
    else:
        assert data is not None and errors == []


async def test_values_that_serialize_to_something_else_are_serialized() -> None:
    """A bool in an Int field, a str subclass in a String field: graphql-core's serializers
    decide, not the pass-through of plain str and int values."""

    class Name(str):
        def __str__(self) -> str:
            return "renamed"

    PAGE[1] = item(1, name=Name("item 1"), counts=Counts(total=True, done=False, ratio=2))
    try:
        fast, plain = await answers(
            "{ page { edges { node { name counts { total done ratio } } } } }"
        )
    finally:
        PAGE[1] = item(1)
    assert fast == plain
    assert fast[0]["page"]["edges"][1]["node"]["counts"] == {"total": 1, "done": 0, "ratio": 2.0}


async def test_a_guarded_field_below_the_root_stays_guarded() -> None:
    result = await schema(PlainFieldsExecutor).execute("{ one { id secret } }")
    assert result.data == {"one": None}  # the non-null guarded field nulls its parent
    assert [(e.message, e.path) for e in result.errors or []] == [
        ("not for you", ["one", "secret"])
    ]


@pytest.mark.parametrize(
    ("changes", "query", "message"),
    [
        ({"name": None}, "{ page { edges { node { id name } } } }", "Cannot return null"),
        ({"color": "green"}, "{ page { edges { node { color } } } }", "cannot represent"),
        ({"counts": None}, "{ page { edges { node { counts { total } } } } }", "Cannot return"),
        ({"counts": Broken()}, "{ page { edges { node { counts { total } } } } }", "no total"),
        ({"maybe": Broken()}, "{ page { edges { node { id maybe { total } } } } }", "no total"),
        ({"at": "yesterday"}, "{ page { edges { node { at } } } }", "isoformat"),
        (
            {"counts": Counts(total=2**40, done=None, ratio=1.5)},
            "{ page { edges { node { counts { total done ratio } } } } }",
            "32-bit",
        ),
        ({"tags": 3}, "{ page { edges { node { tags } } } }", "Iterable"),
        ({"tags": ["a", None]}, "{ page { edges { node { tags } } } }", "Cannot return null"),
    ],
)
async def test_an_error_in_a_plain_field_is_reported_as_graphql_core_does(
    changes: dict[str, Any], query: str, message: str
) -> None:
    PAGE[2] = item(2, **changes)
    try:
        fast, plain = await answers(query)
    finally:
        PAGE[2] = item(2)
    assert fast == plain
    errors = fast[1]
    assert errors and message in errors[0][0]
    assert errors[0][1][:4] == ["page", "edges", 2, "node"]


class NestedHook(SchemaExtension):
    """A per-field hook that acts below the root: the one-step path must stay off."""

    seen: list[str] = []

    def resolve(
        self, _next: Callable[..., Any], root: Any, info: Any, *args: Any, **kwargs: Any
    ) -> Any:
        NestedHook.seen.append(info.field_name)
        return _next(root, info, *args, **kwargs)


class RootHook(RootFieldExtension):
    seen: list[str] = []

    def resolve_root(
        self, _next: Callable[..., Any], root: Any, info: Any, *args: Any, **kwargs: Any
    ) -> Any:
        RootHook.seen.append(info.field_name)
        return _next(root, info, *args, **kwargs)


async def test_a_hook_below_the_root_sees_every_field() -> None:
    NestedHook.seen.clear()
    result = await schema(PlainFieldsExecutor, [NestedHook]).execute(
        "{ one { id counts { total } } }"
    )
    assert result.errors is None
    assert NestedHook.seen == ["one", "id", "counts", "total"]


async def test_a_root_field_hook_sees_root_fields() -> None:
    RootHook.seen.clear()
    result = await schema(PlainFieldsExecutor, [RootHook]).execute("{ one { id } page { total } }")
    assert result.errors is None
    assert RootHook.seen == ["one", "page"]


def test_a_root_field_hook_may_not_override_resolve() -> None:
    with pytest.raises(TypeError, match="resolve_root"):

        class Sneaky(RootFieldExtension):
            def resolve(
                self, _next: Callable[..., Any], root: Any, info: Any, *a: Any, **k: Any
            ) -> Any:
                return _next(root, info, *a, **k)


def test_the_api_schema_reads_plain_fields_in_one_step() -> None:
    """Every per-field hook of the public schema is a root-field hook (else the one-step path
    would be off for every request), and its executor is the one-step one."""
    built = build_schema(Settings(fast_paths=True))
    assert built.execution_context_class is FastExecutor
    assert FastExecutor.__mro__[1:5] == (
        AuthorizingMixin,
        StringListsMixin,
        BuildStep,
        PlainFieldsMixin,
    )
    hooks = [e for e in (f() for f in built.extensions) if e._implements_resolve()]
    assert hooks and root_fields_only(hooks)


def test_without_fast_paths_the_executor_is_strawberrys_with_security_alone() -> None:
    built = build_schema(Settings(fast_paths=False))
    assert built.execution_context_class is SecureExecutor
    assert SecureExecutor.__mro__[1:4] == (
        AuthorizingMixin,
        BuildStep,
        StrawberryGraphQLCoreExecutionContext,
    )
    assert not built.remembers_hooks
