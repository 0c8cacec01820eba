"""Schema extensions' hooks run by ``RememberingExtensionsRunner`` exactly as by strawberry's
own runner: the same hooks, in the same order, around the same errors."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from typing import Any

import strawberry
from strawberry.extensions import SchemaExtension
from strawberry.extensions.runner import SchemaExtensionsRunner
from strawberry.types import ExecutionContext

from backfiller.schema.extension_hooks import RememberingExtensionsRunner

CALLS: list[str] = []


class Generators(SchemaExtension):
    def on_operation(self) -> Iterator[None]:
        CALLS.append("operation before")
        yield
        CALLS.append("operation after")

    def on_execute(self) -> Iterator[None]:
        CALLS.append("execute before")
        try:
            yield
        finally:
            CALLS.append("execute after")


class AsyncGenerators(SchemaExtension):
    async def on_parse(self) -> AsyncIterator[None]:
        CALLS.append("parse before")
        yield
        CALLS.append("parse after")


class Plain(SchemaExtension):
    def on_validate(self) -> None:  # type: ignore[override]
        CALLS.append("validate, plain")


class Coroutine(SchemaExtension):
    async def on_execute(self) -> None:  # type: ignore[override]
        CALLS.append("execute, coroutine")


class Results(SchemaExtension):
    def get_results(self) -> dict[str, Any]:
        return {"plain": 1, "shared": "plain"}


class AsyncResults(SchemaExtension):
    async def get_results(self) -> dict[str, Any]:
        return {"awaited": 2, "shared": "awaited"}


@strawberry.type
class Query:
    @strawberry.field
    def fine(self) -> int:
        return 1

    @strawberry.field
    def broken(self) -> int:
        raise ValueError("broken")


class Remembering(strawberry.Schema):
    def create_extensions_runner(
        self, execution_context: ExecutionContext, extensions: list[SchemaExtension]
    ) -> SchemaExtensionsRunner:
        return RememberingExtensionsRunner(execution_context, extensions)


def schema_of(cls: type[strawberry.Schema]) -> strawberry.Schema:
    return cls(
        query=Query,
        extensions=[Generators, Results, AsyncGenerators, Plain, AsyncResults, Coroutine],
    )


async def calls_of(schema: strawberry.Schema, query: str) -> tuple[list[str], Any]:
    CALLS.clear()
    result = await schema.execute(query)
    answer = (result.data, [e.message for e in result.errors or []], result.extensions)
    return list(CALLS), answer


async def test_the_hooks_run_as_strawberry_runs_them() -> None:
    ours, theirs = schema_of(Remembering), schema_of(strawberry.Schema)
    for query in ("{ fine }", "{ broken }", "{ nope }", "{ fine"):
        for _ in range(2):  # the second time from the remembered plans
            assert await calls_of(ours, query) == await calls_of(theirs, query), query
    seen, _ = await calls_of(ours, "{ fine }")
    assert seen[0] == "operation before" and "execute, coroutine" in seen


async def test_the_extensions_results_are_strawberrys() -> None:
    ours, theirs = schema_of(Remembering), schema_of(strawberry.Schema)
    _, (_, _, extensions) = await calls_of(ours, "{ fine }")
    assert extensions == {"plain": 1, "awaited": 2, "shared": "awaited"}
    assert (await calls_of(theirs, "{ fine }"))[1][2] == extensions
