"""Long lists of strings in variables (a launch's keys), coerced in one step: the same answers,
the same errors and the same records as graphql-core's item-by-item coercion."""

from __future__ import annotations

from datetime import date, timedelta
from typing import Any

from graphql import parse

from backfiller.resolvers.string_lists import LIFT_AT, put_back, set_aside
from backfiller.storage import Database
from backfiller.storage.records import BackfillRecord
from tests.support import GraphQLRunner, count_rows

LAUNCH = """
mutation Launch($input: LaunchBackfillInput!) {
  launchBackfill(input: $input) {
    backfill { id partitionSelection { keys } counts { total } }
    userErrors { field message code }
  }
}
"""

# The list as a variable of its own, inside an input written in the document.
LAUNCH_KEYS = """
mutation Launch($keys: [String!]!) {
  launchBackfill(input: {target: {job: "daily_sales"}, partitions: {keys: $keys}}) {
    backfill { id partitionSelection { keys } counts { total } }
    userErrors { field message code }
  }
}
"""


def days(count: int, first: date = date(2024, 1, 1)) -> list[str]:
    return [(first + timedelta(days=i)).isoformat() for i in range(count)]


def keys_input(keys: Any) -> dict[str, Any]:
    return {"input": {"target": {"job": "daily_sales"}, "partitions": {"keys": keys}}}


async def test_a_long_list_launches_every_key_in_its_order(gql: GraphQLRunner) -> None:
    keys = list(reversed(days(300)))
    data = await gql(LAUNCH, keys_input(keys))
    payload = data["launchBackfill"]
    assert payload["userErrors"] == []
    assert payload["backfill"]["partitionSelection"]["keys"] == keys
    assert payload["backfill"]["counts"]["total"] == 300


async def test_a_list_variable_used_inside_a_literal_input_keeps_its_keys(
    gql: GraphQLRunner,
) -> None:
    keys = days(LIFT_AT * 3)
    data = await gql(LAUNCH_KEYS, {"keys": keys})
    payload = data["launchBackfill"]
    assert payload["userErrors"] == []
    assert payload["backfill"]["partitionSelection"]["keys"] == keys


async def test_a_non_string_item_is_refused_at_its_index_and_nothing_is_written(
    gql: GraphQLRunner, database: Database
) -> None:
    for bad in (20240101, None, ["2024-01-01"], {"key": "2024-01-01"}):
        keys: list[Any] = days(LIFT_AT * 2)
        keys[LIFT_AT + 3] = bad
        result = await gql.raw(LAUNCH, keys_input(keys))
        assert result.data is None
        (error,) = result.errors
        assert error.message.startswith(
            f"Variable '$input' has invalid value at .partitions.keys[{LIFT_AT + 3}]"
        ), error.message
    assert await count_rows(database, BackfillRecord) == 0


async def test_an_error_elsewhere_in_the_input_is_reported_as_usual(
    gql: GraphQLRunner, database: Database
) -> None:
    variables = keys_input(days(LIFT_AT * 2))
    variables["input"]["order"] = "SIDEWAYS"
    result = await gql.raw(LAUNCH, variables)
    (error,) = result.errors
    assert "Variable '$input' has invalid value at .order" in error.message, error.message
    assert "SIDEWAYS" in error.message
    assert await count_rows(database, BackfillRecord) == 0


async def test_duplicate_and_unknown_keys_in_a_long_list_are_user_errors(
    gql: GraphQLRunner, database: Database
) -> None:
    doubled = [*days(LIFT_AT * 2), "2024-01-05"]
    unknown = [*days(LIFT_AT * 2), "1999-12-31"]
    for keys, code in ((doubled, "INVALID_ARGUMENT"), (unknown, "PARTITION_NOT_FOUND")):
        payload = (await gql(LAUNCH, keys_input(keys)))["launchBackfill"]
        assert payload["backfill"] is None
        assert [e["code"] for e in payload["userErrors"]] == [code]
    assert await count_rows(database, BackfillRecord) == 0


def test_only_long_flat_lists_of_strings_are_set_aside(gql: GraphQLRunner) -> None:
    schema = gql.schema._schema
    document = parse(LAUNCH)
    short = keys_input(days(LIFT_AT - 1))
    assert set_aside(schema, document, None, short) == (short, {})
    mixed = keys_input([*days(LIFT_AT), 7])
    assert set_aside(schema, document, None, mixed) == (mixed, {})
    long = keys_input(days(LIFT_AT))
    lifted, aside = set_aside(schema, document, None, long)
    assert lifted == keys_input([])
    assert aside == {"input": [(("partitions", "keys"), days(LIFT_AT))]}
    assert long == keys_input(days(LIFT_AT)), "the request's own value is left as it was"
    # Another operation of the document than the one named: nothing to set aside.
    assert set_aside(schema, document, "Other", long) == (long, {})


def test_put_back_says_so_when_a_list_finds_no_place_again() -> None:
    """(On False, the executor coerces the variables again as received.)"""

    class Values:
        coerced: dict[str, Any] = {"input": {"partitions": {"range": None}}}
        sources: dict[str, Any] = {}

    aside: dict[str, list[tuple[tuple[str, ...], list[str]]]] = {
        "input": [(("partitions", "keys"), days(LIFT_AT))]
    }
    assert put_back(Values(), {}, aside) is False
