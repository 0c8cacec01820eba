"""The filters of the backfill list: asset, creator, tags, title text and creation time, alone
and together, with keyset pages; bad filters are typed errors that change nothing."""

from __future__ import annotations

from typing import Any

import pytest

from tests.support import LAUNCH, FrozenClock, GraphQLRunner

LIST = """
query($first: Int!, $after: String, $filter: BackfillFilter) {
  backfills(first: $first, after: $after, filter: $filter) {
    nodes { id }
    pageInfo { hasNextPage endCursor }
  }
}
"""


async def launch(gql: GraphQLRunner, target: dict[str, Any], **extra: Any) -> str:
    partitions = {"keys": ["2024-01-01"]}
    data = await gql(LAUNCH, {"input": {"target": target, "partitions": partitions, **extra}})
    assert data["launchBackfill"]["userErrors"] == []
    return str(data["launchBackfill"]["backfill"]["id"])


async def ids(gql: GraphQLRunner, filter: dict[str, Any], first: int = 10) -> list[str]:
    found: list[str] = []
    after = None
    while True:
        page = (await gql(LIST, {"first": first, "after": after, "filter": filter}))["backfills"]
        found += [n["id"] for n in page["nodes"]]
        if not page["pageInfo"]["hasNextPage"]:
            return found
        after = page["pageInfo"]["endCursor"]


async def test_every_filter_alone_and_together(gql: GraphQLRunner, clock: FrozenClock) -> None:
    gql.actor = "alice"
    sales = await launch(
        gql,
        {"job": "daily_sales"},
        title="March sales rerun (100% of days)",
        tags=[{"key": "team", "value": "sales"}, {"key": "ticket", "value": "DATA-1"}],
    )
    clock.advance(hours=1)
    gql.actor = "bob"
    visits = await launch(
        gql,
        {"assets": {"names": ["daily_visits"], "upstream": True}},
        title="Visits_fix",
        tags=[{"key": "team", "value": "web"}],
    )
    clock.advance(hours=1)
    later = await launch(gql, {"job": "daily_sales"}, title="march SALES again")
    middle = (await gql("query($id: ID!) { backfill(id: $id) { createdAt } }", {"id": visits}))[
        "backfill"
    ]["createdAt"]

    assert await ids(gql, {"asset": "raw_events"}) == [visits]  # added as upstream
    assert await ids(gql, {"asset": "daily_visits"}) == [visits]
    assert await ids(gql, {"asset": "monthly_report"}) == []
    assert await ids(gql, {"creator": "alice"}) == [sales]
    assert await ids(gql, {"creator": "bob"}) == [later, visits]
    assert await ids(gql, {"tags": [{"key": "team", "value": "sales"}]}) == [sales]
    both = [{"key": "team", "value": "sales"}, {"key": "ticket", "value": "DATA-1"}]
    assert await ids(gql, {"tags": both}) == [sales]
    assert await ids(gql, {"tags": [*both, {"key": "ticket", "value": "DATA-2"}]}) == []
    assert await ids(gql, {"search": "march sales"}) == [later, sales]  # any case
    assert await ids(gql, {"search": "  100%  "}) == [sales]  # % is a character, not a pattern
    assert await ids(gql, {"search": "s_f"}) == [visits]  # and so is _
    assert await ids(gql, {"search": "sXf"}) == []
    assert await ids(gql, {"search": ""}) == [later, visits, sales]
    assert await ids(gql, {"createdAfter": middle}) == [later, visits]
    assert await ids(gql, {"createdBefore": middle}) == [sales]
    assert await ids(gql, {"createdAfter": middle, "createdBefore": middle}) == []
    assert await ids(gql, {"job": "daily_sales", "creator": "bob", "search": "march"}) == [later]
    assert await ids(gql, {"job": "daily_sales"}, first=1) == [later, sales]  # page by page


@pytest.mark.parametrize(
    ("filter", "message"),
    [
        ({"search": "x" * 201}, "at most 200"),
        ({"createdAfter": "2024-01-01T00:00:00"}, "time zone"),
    ],
)
async def test_bad_filters_are_typed_errors(
    gql: GraphQLRunner, filter: dict[str, Any], message: str
) -> None:
    result = await gql.raw(LIST, {"first": 5, "filter": filter})
    assert result.errors is not None
    assert message in result.errors[0].message
    assert result.errors[0].extensions == {"code": "INVALID_ARGUMENT"}
