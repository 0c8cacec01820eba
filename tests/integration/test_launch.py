"""launchBackfill and previewBackfill through the schema, on the real database."""

from __future__ import annotations

import asyncio
from datetime import UTC, date, datetime, timedelta
from typing import Any

import pytest

from backfiller.domain import RunState
from backfiller.storage import Database
from backfiller.storage.records import (
    BackfillEventRecord,
    BackfillRecord,
    BackfillTagRecord,
    Base,
    PartitionStateRecord,
    SlotRecord,
)
from tests.support import GraphQLRunner, count_rows

LAUNCH = """
mutation Launch($input: LaunchBackfillInput!) {
  launchBackfill(input: $input) {
    backfill {
      id title description status reprocess order maxConcurrentRuns runConfig creator
      target { job }
      partitionSelection { range { start end } keys all }
      tags { key value }
      counts { total pending queued running succeeded failed canceled skipped percentDone }
      createdAt startedAt endedAt
    }
    userErrors { field message code }
  }
}
"""

PREVIEW = """
mutation Preview($input: LaunchBackfillInput!) {
  previewBackfill(input: $input) {
    preview { job total runs skipped firstPartitions skippedPartitions { key reason } }
    userErrors { field message code }
  }
}
"""


def daily(start: str = "2024-01-01", end: str = "2024-01-31", **extra: Any) -> dict[str, Any]:
    return {
        "target": {"job": "daily_sales"},
        "partitions": {"range": {"start": start, "end": end}},
        **extra,
    }


async def launch(gql: GraphQLRunner, input: dict[str, Any]) -> dict[str, Any]:
    data = await gql(LAUNCH, {"input": input})
    payload: dict[str, Any] = data["launchBackfill"]
    return payload


async def test_launch_stores_the_selection_as_asked_and_reads_it_back(
    gql: GraphQLRunner, database: Database
) -> None:
    payload = await launch(
        gql,
        daily(
            title="January rerun",
            description="after the 2024 fix",
            reprocess="FAILED_AND_MISSING",
            order="NEWEST_FIRST",
            maxConcurrentRuns=4,
            tags=[{"key": "ticket", "value": "DATA-42"}, {"key": "team", "value": "sales"}],
            runConfig=None,
        ),
    )
    assert payload["userErrors"] == []
    backfill = payload["backfill"]
    assert backfill["id"].startswith("bf_")
    assert backfill["status"] == "REQUESTED"
    assert backfill["target"] == {"job": "daily_sales"}
    assert backfill["partitionSelection"] == {
        "range": {"start": "2024-01-01", "end": "2024-01-31"},
        "keys": None,
        "all": False,
    }
    assert backfill["title"] == "January rerun"
    assert backfill["description"] == "after the 2024 fix"
    assert backfill["reprocess"] == "FAILED_AND_MISSING"
    assert backfill["order"] == "NEWEST_FIRST"
    assert backfill["maxConcurrentRuns"] == 4
    assert backfill["tags"] == [
        {"key": "ticket", "value": "DATA-42"},
        {"key": "team", "value": "sales"},
    ]
    assert backfill["counts"] == {
        "total": 31,
        "pending": 31,
        "queued": 0,
        "running": 0,
        "succeeded": 0,
        "failed": 0,
        "canceled": 0,
        "skipped": 0,
        "percentDone": 0.0,
    }
    assert backfill["createdAt"] == gql.clock.now.isoformat()
    assert backfill["startedAt"] is None
    # One insert: the backfill, its tags and its LAUNCHED event; no partition is expanded.
    assert await count_rows(database, BackfillRecord) == 1
    assert await count_rows(database, BackfillTagRecord) == 2
    assert await count_rows(database, BackfillEventRecord) == 1
    assert await count_rows(database, SlotRecord) == 0


async def test_a_million_partitions_cost_one_row(gql: GraphQLRunner, database: Database) -> None:
    gql.clock.now = datetime(2026, 6, 15, tzinfo=UTC)
    payload = await launch(
        gql,
        {
            "target": {"job": "hourly_events"},
            "partitions": {"all": True},
        },
    )
    assert payload["userErrors"] == []
    total = payload["backfill"]["counts"]["total"]
    assert total == (datetime(2026, 6, 15, tzinfo=UTC) - datetime(2026, 1, 1, tzinfo=UTC)).days * 24
    assert await count_rows(database, SlotRecord) == 0
    assert await count_rows(database, BackfillRecord) == 1


async def test_a_long_key_list_adds_no_row_per_key(gql: GraphQLRunner, database: Database) -> None:
    """A launch of 9,000 explicit keys writes the same rows, table by table, as one of 3."""
    gql.clock.now = datetime(2050, 1, 1, tzinfo=UTC)
    first = date(2024, 1, 1)
    tables = [table for table in Base.metadata.sorted_tables if table.name != "alembic_version"]

    async def rows() -> dict[str, int]:
        return {table.name: await count_rows(database, table) for table in tables}

    written: list[dict[str, int]] = []
    for size in (3, 9_000):
        keys = [(first + timedelta(days=day)).isoformat() for day in range(size)]
        before = await rows()
        payload = await launch(
            gql, {"target": {"job": "daily_sales"}, "partitions": {"keys": keys}}
        )
        assert payload["userErrors"] == []
        assert payload["backfill"]["counts"]["total"] == size
        after = await rows()
        written.append({name: after[name] - before[name] for name in after})
    assert written[0] == written[1]
    assert written[0]["backfills"] == 1


async def test_keys_selection_reads_back_in_the_order_given(gql: GraphQLRunner) -> None:
    keys = ["2024-03-02", "2024-01-05", "2024-02-29"]
    payload = await launch(gql, {"target": {"job": "daily_sales"}, "partitions": {"keys": keys}})
    assert payload["userErrors"] == []
    assert payload["backfill"]["partitionSelection"]["keys"] == keys
    assert payload["backfill"]["counts"]["total"] == 3


@pytest.mark.parametrize(
    ("input", "code", "field"),
    [
        (
            {"target": {"job": "nope"}, "partitions": {"all": True}},
            "JOB_NOT_FOUND",
            ["target", "job"],
        ),
        (daily(start="2023-12-01"), "PARTITION_NOT_FOUND", ["partitions", "range", "start"]),
        (daily(end="2024-13-01"), "INVALID_PARTITION_RANGE", ["partitions", "range", "end"]),
        (daily(start="yesterday"), "INVALID_PARTITION_RANGE", ["partitions", "range", "start"]),
        (
            daily(start="2024-02-01", end="2024-01-01"),
            "INVALID_PARTITION_RANGE",
            ["partitions", "range"],
        ),
        (
            {"target": {"job": "daily_sales"}, "partitions": {"keys": []}},
            "EMPTY_SELECTION",
            ["partitions", "keys"],
        ),
        (
            {"target": {"job": "customer_sync"}, "partitions": {"all": True}},
            "EMPTY_SELECTION",
            ["partitions", "all"],
        ),
        (
            {"target": {"job": "daily_sales"}, "partitions": {"all": False}},
            "INVALID_ARGUMENT",
            ["partitions", "all"],
        ),
        (
            {"target": {"job": "daily_sales"}, "partitions": {"keys": ["2024-01-01"] * 2}},
            "INVALID_ARGUMENT",
            ["partitions", "keys"],
        ),
        (
            {"target": {"job": "region_report"}, "partitions": {"keys": ["emea", "mars"]}},
            "PARTITION_NOT_FOUND",
            ["partitions", "keys"],
        ),
        (
            {
                "target": {"job": "region_report"},
                "partitions": {"all": True},
                "runConfig": {"currency": "GBP"},
            },
            "INVALID_RUN_CONFIG",
            ["runConfig", "currency"],
        ),
        (
            {
                "target": {"job": "region_report"},
                "partitions": {"all": True},
                "runConfig": {"colour": "red"},
            },
            "INVALID_RUN_CONFIG",
            ["runConfig"],
        ),
        (daily(runConfig={"x": 1}), "INVALID_RUN_CONFIG", ["runConfig"]),
        (daily(maxConcurrentRuns=0), "INVALID_ARGUMENT", ["maxConcurrentRuns"]),
        (daily(title="t" * 501), "INVALID_ARGUMENT", ["title"]),
        (daily(title="nul\x00"), "INVALID_ARGUMENT", ["title"]),
        (daily(idempotencyKey="  "), "INVALID_ARGUMENT", ["idempotencyKey"]),
        (
            daily(tags=[{"key": "a", "value": "1"}, {"key": "a", "value": "2"}]),
            "INVALID_ARGUMENT",
            ["tags", "1", "key"],
        ),
        (daily(tags=[{"key": "", "value": "1"}]), "INVALID_ARGUMENT", ["tags", "0", "key"]),
    ],
)
async def test_bad_input_gets_a_typed_error_and_writes_nothing(
    gql: GraphQLRunner, database: Database, input: dict[str, Any], code: str, field: list[str]
) -> None:
    for mutation, name in ((LAUNCH, "launchBackfill"), (PREVIEW, "previewBackfill")):
        payload = (await gql(mutation, {"input": input}))[name]
        assert payload["userErrors"], payload
        first = payload["userErrors"][0]
        assert first["code"] == code, payload["userErrors"]
        assert first["field"] == field, payload["userErrors"]
        assert first["message"]
        assert payload.get("backfill", payload.get("preview")) is None
    assert await count_rows(database, BackfillRecord) == 0
    assert await count_rows(database, BackfillEventRecord) == 0


async def test_range_too_large_is_refused(gql: GraphQLRunner, database: Database) -> None:
    from dataclasses import replace

    gql.settings = replace(gql.settings, max_partitions_per_backfill=10)
    gql.__post_init__()
    payload = await launch(gql, daily())
    assert [e["code"] for e in payload["userErrors"]] == ["RANGE_TOO_LARGE"]
    assert await count_rows(database, BackfillRecord) == 0


async def test_one_of_violations_are_refused_by_the_schema(gql: GraphQLRunner) -> None:
    result = await gql.raw(
        LAUNCH,
        {
            "input": {
                "target": {"job": "daily_sales"},
                "partitions": {"all": True, "keys": ["2024-01-01"]},
            }
        },
    )
    assert result.errors
    assert "exactly one" in result.errors[0].message.lower()


async def test_idempotency_key_returns_the_first_backfill(
    gql: GraphQLRunner, database: Database
) -> None:
    first = await launch(gql, daily(idempotencyKey="k-1"))
    again = await launch(gql, daily(idempotencyKey="k-1"))
    assert again["userErrors"] == []
    assert again["backfill"]["id"] == first["backfill"]["id"]
    other = await launch(gql, daily(idempotencyKey="k-1", title="different"))
    assert [e["code"] for e in other["userErrors"]] == ["IDEMPOTENCY_KEY_REUSED"]
    assert other["backfill"] is None
    assert await count_rows(database, BackfillRecord) == 1


async def test_fifty_concurrent_launches_with_one_key_create_one_backfill(
    gql: GraphQLRunner, database: Database
) -> None:
    results = await asyncio.gather(*(launch(gql, daily(idempotencyKey="burst")) for _ in range(50)))
    ids = {r["backfill"]["id"] for r in results}
    assert all(r["userErrors"] == [] for r in results)
    assert len(ids) == 1
    assert await count_rows(database, BackfillRecord) == 1
    assert await count_rows(database, BackfillEventRecord) == 1


async def test_preview_counts_skips_from_history_and_writes_nothing(
    gql: GraphQLRunner, database: Database
) -> None:
    now = gql.clock.now
    async with database.write() as session:
        for key, state in [
            ("2024-01-02", RunState.SUCCESS),
            ("2024-01-03", RunState.FAILED),
            ("2024-01-04", RunState.CANCELED),
        ]:
            session.add(
                PartitionStateRecord(
                    job_name="daily_sales",
                    partition_key=key,
                    status=state,
                    run_id=None,
                    updated_at=now,
                )
            )
    input = daily(end="2024-01-05")
    missing = (await gql(PREVIEW, {"input": input}))["previewBackfill"]["preview"]
    assert missing["total"] == 5
    assert missing["skipped"] == 2
    assert missing["runs"] == 3
    assert missing["firstPartitions"] == ["2024-01-01", "2024-01-04", "2024-01-05"]
    assert missing["skippedPartitions"] == [
        {"key": "2024-01-02", "reason": "ALREADY_SUCCEEDED"},
        {"key": "2024-01-03", "reason": "ALREADY_FAILED"},
    ]
    failed_too = (await gql(PREVIEW, {"input": {**input, "reprocess": "FAILED_AND_MISSING"}}))[
        "previewBackfill"
    ]["preview"]
    assert failed_too["skipped"] == 1
    everything = (
        await gql(PREVIEW, {"input": {**input, "reprocess": "ALL", "order": "NEWEST_FIRST"}})
    )["previewBackfill"]["preview"]
    assert everything["skipped"] == 0
    assert everything["firstPartitions"][0] == "2024-01-05"
    assert await count_rows(database, BackfillRecord) == 0
