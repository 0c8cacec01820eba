"""Queries: connections with keyset cursors, filters, node, jobs, dynamic partitions."""

from __future__ import annotations

from typing import Any

import pytest
from sqlalchemy import update

from backfiller.storage import Database
from backfiller.storage.records import BackfillRecord, DynamicPartitionRecord
from tests.support import LAUNCH, GraphQLRunner, count_rows, launch

LIST = """
query($first: Int!, $after: String, $filter: BackfillFilter) {
  backfills(first: $first, after: $after, filter: $filter) {
    edges { cursor node { id target { job } status } }
    pageInfo { hasNextPage endCursor }
  }
}
"""


async def launch_keys(gql: GraphQLRunner, job: str, keys: list[str], **extra: Any) -> str:
    return await launch(gql, {"target": {"job": job}, "partitions": {"keys": keys}}, **extra)


async def test_backfills_pages_newest_first_without_gaps(gql: GraphQLRunner) -> None:
    ids = [await launch_keys(gql, "daily_sales", [f"2024-01-{i + 1:02d}"]) for i in range(7)]
    seen: list[str] = []
    after = None
    while True:
        page = (await gql(LIST, {"first": 3, "after": after}))["backfills"]
        seen += [e["node"]["id"] for e in page["edges"]]
        if not page["pageInfo"]["hasNextPage"]:
            break
        after = page["pageInfo"]["endCursor"]
    assert seen == list(reversed(ids))


async def test_backfills_filters_by_job_status_and_tag(gql: GraphQLRunner) -> None:
    a = await launch_keys(gql, "daily_sales", ["2024-01-01"], tags=[{"key": "team", "value": "x"}])
    b = await launch_keys(gql, "region_report", ["emea"], tags=[{"key": "team", "value": "y"}])
    await gql(
        "mutation($id: ID!) { cancelBackfill(input: {id: $id}) { userErrors { code } } }", {"id": b}
    )

    async def ids(filter: dict[str, Any]) -> list[str]:
        page = (await gql(LIST, {"first": 10, "filter": filter}))["backfills"]
        return [e["node"]["id"] for e in page["edges"]]

    assert await ids({"job": "daily_sales"}) == [a]
    assert await ids({"statuses": ["CANCELED"]}) == [b]
    assert await ids({"statuses": ["REQUESTED", "CANCELED"]}) == [b, a]
    assert await ids({"tag": {"key": "team", "value": "x"}}) == [a]
    assert await ids({"tag": {"key": "team", "value": "z"}}) == []


@pytest.mark.parametrize("first", [101, -1])
async def test_first_is_capped(gql: GraphQLRunner, first: int) -> None:
    result = await gql.raw(LIST, {"first": first})
    assert result.errors and "first" in result.errors[0].message
    assert result.errors[0].extensions == {"code": "INVALID_ARGUMENT"}


@pytest.mark.parametrize("after", ["garbage", "cnVuOjE", "=" * 300])
async def test_foreign_cursors_are_refused(gql: GraphQLRunner, after: str) -> None:
    result = await gql.raw(LIST, {"first": 2, "after": after})
    assert result.errors and "cursor" in result.errors[0].message


async def test_node_and_backfill_by_id(gql: GraphQLRunner) -> None:
    backfill_id = await launch_keys(gql, "daily_sales", ["2024-01-01"])
    data = await gql(
        """query($id: ID!) {
          node(id: $id) { id ... on Backfill { target { job } } }
          backfill(id: $id) { id }
          missing: backfill(id: "bf_424242") { id }
          junk: node(id: "junk") { id }
          run(id: "run_1") { id }
          apiVersion
        }""",
        {"id": backfill_id},
    )
    assert data["node"] == {"id": backfill_id, "target": {"job": "daily_sales"}}
    assert data["backfill"] == {"id": backfill_id}
    assert data["missing"] is None and data["junk"] is None and data["run"] is None
    assert data["apiVersion"] == "v1"


async def test_partitions_of_a_backfill_page_in_launch_order(gql: GraphQLRunner) -> None:
    data = await gql(
        LAUNCH,
        {
            "input": {
                "target": {"job": "daily_sales"},
                "partitions": {"range": {"start": "2024-02-27", "end": "2024-03-02"}},
                "order": "NEWEST_FIRST",
            }
        },
    )
    backfill_id = data["launchBackfill"]["backfill"]["id"]
    query = """query($id: ID!, $after: String) { backfill(id: $id) {
        partitions(first: 2, after: $after) {
          nodes { key index status } pageInfo { hasNextPage endCursor } } } }"""
    keys: list[str] = []
    after = None
    while True:
        page = (await gql(query, {"id": backfill_id, "after": after}))["backfill"]["partitions"]
        keys += [n["key"] for n in page["nodes"]]
        assert all(n["status"] == "PENDING" for n in page["nodes"])
        if not page["pageInfo"]["hasNextPage"]:
            break
        after = page["pageInfo"]["endCursor"]
    assert keys == ["2024-03-02", "2024-03-01", "2024-02-29", "2024-02-28", "2024-02-27"]


async def test_jobs_describe_their_partitions(gql: GraphQLRunner) -> None:
    data = await gql(
        """{ jobs { name } job(name: "region_report") {
              name description configSchema retryPolicy { maxRetries delaySeconds }
              partitions { kind count keys(first: 2) { nodes totalCount pageInfo { hasNextPage } } }
              partitionStatusRanges { status startKey endKey count } }
            flaky: job(name: "flaky_export") { retryPolicy { maxRetries delaySeconds }
              partitions { kind cadence timezone keyFormat start end } }
            none: job(name: "nope") { name } }"""
    )
    assert [j["name"] for j in data["jobs"]] == sorted(j["name"] for j in data["jobs"])
    job = data["job"]
    assert job["partitions"]["kind"] == "STATIC"
    assert job["partitions"]["count"] == 3
    assert job["partitions"]["keys"] == {
        "nodes": ["emea", "amer"],
        "totalCount": 3,
        "pageInfo": {"hasNextPage": True},
    }
    assert job["configSchema"]["properties"]["currency"]["enum"] == ["EUR", "USD", "JPY"]
    assert job["partitionStatusRanges"] == [
        {"status": "PENDING", "startKey": "emea", "endKey": "apac", "count": 3}
    ]
    flaky = data["flaky"]
    assert flaky["retryPolicy"] == {"maxRetries": 2, "delaySeconds": 1.0}
    assert flaky["partitions"]["cadence"] == "daily"
    assert flaky["partitions"]["timezone"] == "UTC"
    assert flaky["partitions"]["end"] is None
    assert data["none"] is None


DYNAMIC = """
mutation($name: String!, $keys: [String!]!) {
  add: addDynamicPartitions(input: {name: $name, keys: $keys}) {
    keysChanged userErrors { code field }
  }
}
"""


async def test_dynamic_partitions_are_added_launched_and_deleted(
    gql: GraphQLRunner, database: Database
) -> None:
    added = (await gql(DYNAMIC, {"name": "customers", "keys": ["acme", "globex", "acme"]}))["add"]
    assert added == {"keysChanged": 2, "userErrors": []}
    again = (await gql(DYNAMIC, {"name": "customers", "keys": ["acme"]}))["add"]
    assert again["keysChanged"] == 0
    backfill_id = await launch_keys(gql, "customer_sync", ["globex"])
    assert backfill_id.startswith("bf_")
    deleted = await gql(
        """mutation { deleteDynamicPartitions(input: {name: "customers", keys: ["acme", "x"]}) {
            keysChanged userErrors { code } } }"""
    )
    assert deleted["deleteDynamicPartitions"]["keysChanged"] == 1
    assert await count_rows(database, DynamicPartitionRecord) == 1


@pytest.mark.parametrize(
    ("name", "keys", "code"),
    [
        ("unknown", ["a"], "NOT_FOUND"),
        ("customers", [], "EMPTY_SELECTION"),
        ("customers", [""], "INVALID_ARGUMENT"),
        ("customers", [" padded "], "INVALID_ARGUMENT"),
        ("customers", ["x" * 201], "INVALID_ARGUMENT"),
    ],
)
async def test_bad_dynamic_partition_input_changes_nothing(
    gql: GraphQLRunner, database: Database, name: str, keys: list[str], code: str
) -> None:
    payload = (await gql(DYNAMIC, {"name": name, "keys": keys}))["add"]
    assert [e["code"] for e in payload["userErrors"]] == [code]
    assert await count_rows(database, DynamicPartitionRecord) == 0


async def test_a_value_a_plain_field_cannot_serialize_is_an_error_at_its_path(
    gql: GraphQLRunner, database: Database
) -> None:
    """``counts.total`` is read in one step by the executor; a stored value out of GraphQL's
    Int range is still reported in ``errors`` at its path, nulling up to the first nullable
    parent, as graphql-core reports it."""
    first = await launch_keys(gql, "daily_sales", ["2024-01-01"])
    second = await launch_keys(gql, "daily_sales", ["2024-01-02"])
    too_big = update(BackfillRecord).where(BackfillRecord.id == int(second[3:])).values(total=2**40)
    await database.transact(lambda conn: conn.execute(too_big))
    one = await gql.raw(
        "query($id: ID!) { backfill(id: $id) { id counts { total } } }", {"id": second}
    )
    assert one.data == {"backfill": None}
    assert [(e.path, "32-bit" in e.message) for e in one.errors] == [
        (["backfill", "counts", "total"], True)
    ]
    page = await gql.raw("{ backfills(first: 5) { edges { node { id counts { total } } } } }")
    assert page.data is None  # every type up to the root field is non-null
    assert [e.path for e in page.errors] == [["backfills", "edges", 0, "node", "counts", "total"]]
    fine = await gql("query($id: ID!) { backfill(id: $id) { id counts { total } } }", {"id": first})
    assert fine == {"backfill": {"id": first, "counts": {"total": 1}}}


BACKFILL_FIELDS = """
  id title description status reprocess order maxConcurrentRuns runConfig creator
  target { job } partitionSelection { range { start end } keys all } tags { key value }
  counts { total pending queued running succeeded failed canceled skipped done percentDone }
  createdAt startedAt endedAt updatedAt
"""


@pytest.mark.parametrize(
    "input",
    [
        {
            "target": {"job": "region_report"},
            "partitions": {"keys": ["apac", "emea"]},
            "runConfig": {"currency": "JPY"},
            "tags": [{"key": "team", "value": "x"}, {"key": "ticket", "value": "T-1"}],
        },
        {
            "target": {"job": "daily_sales"},
            "partitions": {"range": {"start": "2024-01-01", "end": "2024-01-09"}},
        },
        {"target": {"job": "region_report"}, "partitions": {"all": True}, "title": "all"},
    ],
)
async def test_reads_answer_what_the_launch_answered(
    gql: GraphQLRunner, input: dict[str, Any]
) -> None:
    """``backfill(id)`` and the page read rows whose JSON columns are decoded when returned
    (and tags and keys lazily): the same answer as the launch's, which reads the ORM record."""
    launched = await gql(
        "mutation($input: LaunchBackfillInput!) { launchBackfill(input: $input) {"
        f" backfill {{ {BACKFILL_FIELDS} }} userErrors {{ code }} }} }}",
        {"input": input},
    )
    assert launched["launchBackfill"]["userErrors"] == []
    expected = launched["launchBackfill"]["backfill"]
    one = await gql(
        f"query($id: ID!) {{ backfill(id: $id) {{ {BACKFILL_FIELDS} }} }}", {"id": expected["id"]}
    )
    page = await gql(f"{{ backfills(first: 5) {{ nodes {{ {BACKFILL_FIELDS} }} }} }}")
    assert one["backfill"] == expected
    assert page["backfills"]["nodes"] == [expected]
