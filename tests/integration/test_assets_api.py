"""Asset backfills through the public API, in process against the real database: the graph,
launch errors, the preview per asset, per-asset progress and runs carrying their asset. The
daemon's ticks run directly, with the inline launcher (the example asset graph of the quick
start: raw_events -> daily_visits -> monthly_report -> visits_summary)."""

from __future__ import annotations

from datetime import date
from typing import Any

from sqlalchemy import func, select

from backfiller.daemon.ticks import DaemonState
from backfiller.definitions.loading import Definitions
from backfiller.domain import RunState
from backfiller.launchers import InlineLauncher
from backfiller.storage import Database
from backfiller.storage.records import BackfillRecord, PartitionStateRecord
from tests.integration.test_daemon_ticks import drive
from tests.support import LAUNCH_WITH_TARGET, FrozenClock, GraphQLRunner

PREVIEW = """
mutation($input: LaunchBackfillInput!) {
  previewBackfill(input: $input) {
    preview { total runs skipped firstPartitions assets { name level total runs skipped } }
    userErrors { code message field }
  }
}
"""
LISTED = """
mutation($input: LaunchBackfillInput!) {
  previewBackfill(input: $input) {
    preview { total runs skipped firstPartitions skippedPartitions { key reason }
              assets { name skipped } }
    userErrors { code message field }
  }
}
"""
READ = """
query($id: ID!) {
  backfill(id: $id) {
    status
    counts { total succeeded skipped failed pending }
    partitionStatusRanges { status startKey endKey startIndex count }
    assets { name level counts { total succeeded pending }
             partitionStatusRanges { status startKey endKey count } }
    runs(first: 100) { nodes { job asset partitionKey status } }
  }
}
"""
MARCH = {"range": {"start": "2024-03-01", "end": "2024-03-31"}}


def target(names: list[str], **flags: bool) -> dict[str, Any]:
    return {"assets": {"names": names, **flags}}


async def test_the_graph_is_queryable(gql: GraphQLRunner) -> None:
    data = await gql(
        """{ assets { name level upstream downstream partitions { cadence } }
             asset(name: "monthly_report") { upstream downstream description } }"""
    )
    assert [a["name"] for a in data["assets"]] == [
        "raw_events",
        "daily_visits",
        "monthly_report",
        "visits_summary",
    ]
    assert data["assets"][3] == {
        "name": "visits_summary",
        "level": 3,
        "upstream": ["monthly_report"],
        "downstream": [],
        "partitions": None,
    }
    assert data["asset"]["upstream"] == ["daily_visits"]
    assert data["asset"]["description"] == "Summarize the visits of every day of one month."


async def test_bad_asset_launches_are_user_errors_and_write_nothing(
    gql: GraphQLRunner, database: Database
) -> None:
    unknown = await gql(
        LAUNCH_WITH_TARGET, {"input": {"target": target(["nope"]), "partitions": MARCH}}
    )
    assert unknown["launchBackfill"]["userErrors"] == [
        {
            "code": "ASSET_NOT_FOUND",
            "message": "no asset named 'nope'",
            "field": ["target", "assets", "names", "0"],
        }
    ]
    outside = await gql(
        LAUNCH_WITH_TARGET,
        {
            "input": {
                "target": target(["daily_visits"]),
                "partitions": {"range": {"start": "2023-01-01", "end": "2023-01-02"}},
            }
        },
    )
    assert outside["launchBackfill"]["userErrors"][0]["code"] == "PARTITION_NOT_FOUND"
    both = await gql.raw(
        LAUNCH_WITH_TARGET,
        {"input": {"target": {"job": "daily_sales", **target(["x"])}, "partitions": MARCH}},
    )
    assert both.errors and "exactly one key" in str(both.errors[0])
    async with database.read() as session:
        assert (
            await session.execute(select(func.count()).select_from(BackfillRecord))
        ).scalar_one() == 0


async def test_preview_shows_each_asset_and_its_level(gql: GraphQLRunner) -> None:
    data = await gql(
        PREVIEW,
        {"input": {"target": target(["daily_visits"], downstream=True), "partitions": MARCH}},
    )
    preview = data["previewBackfill"]["preview"]
    assert preview["assets"] == [
        {"name": "daily_visits", "level": 0, "total": 31, "runs": 31, "skipped": 0},
        {"name": "monthly_report", "level": 1, "total": 1, "runs": 1, "skipped": 0},
        {"name": "visits_summary", "level": 2, "total": 1, "runs": 1, "skipped": 0},
    ]
    assert (preview["total"], preview["runs"]) == (33, 33)
    assert preview["firstPartitions"][:2] == ["daily_visits/2024-03-01", "daily_visits/2024-03-02"]


async def test_the_preview_lists_agree_with_its_counts(
    gql: GraphQLRunner, database: Database
) -> None:
    async with database.write() as session:
        for job, key, state in [
            ("raw_events", "2024-05-01", RunState.SUCCESS),
            ("daily_visits", "2024-05-02", RunState.FAILED),
            ("raw_events", "2024-04-30", RunState.SUCCESS),  # outside the selection
        ]:
            session.add(
                PartitionStateRecord(
                    job_name=job,
                    partition_key=key,
                    status=state,
                    run_id=None,
                    updated_at=gql.clock.now,
                )
            )
    may = {"range": {"start": "2024-05-01", "end": "2024-05-03"}}
    asked = {"target": target(["raw_events"], downstream=True), "partitions": may}
    preview = (await gql(LISTED, {"input": asked}))["previewBackfill"]["preview"]
    assert (preview["total"], preview["runs"], preview["skipped"]) == (8, 6, 2)
    # launch order: each day's raw events, then its visits, then the month, then the summary
    assert preview["firstPartitions"] == [
        "daily_visits/2024-05-01",
        "raw_events/2024-05-02",
        "raw_events/2024-05-03",
        "daily_visits/2024-05-03",
        "monthly_report/2024-05-01",
        "visits_summary/default",
    ]
    assert preview["skippedPartitions"] == [
        {"key": "raw_events/2024-05-01", "reason": "ALREADY_SUCCEEDED"},
        {"key": "daily_visits/2024-05-02", "reason": "ALREADY_FAILED"},
    ]
    assert [(a["name"], a["skipped"]) for a in preview["assets"]] == [
        ("raw_events", 1),
        ("daily_visits", 1),
        ("monthly_report", 0),
        ("visits_summary", 0),
    ]
    newest = {**asked, "reprocess": "FAILED_AND_MISSING", "order": "NEWEST_FIRST"}
    preview = (await gql(LISTED, {"input": newest}))["previewBackfill"]["preview"]
    assert (preview["runs"], preview["skipped"]) == (7, 1)
    assert preview["firstPartitions"][:3] == [
        "raw_events/2024-05-03",
        "daily_visits/2024-05-03",
        "raw_events/2024-05-02",
    ]
    assert preview["skippedPartitions"] == [
        {"key": "raw_events/2024-05-01", "reason": "ALREADY_SUCCEEDED"}
    ]
    everything = (await gql(LISTED, {"input": {**asked, "reprocess": "ALL"}}))["previewBackfill"][
        "preview"
    ]
    assert (everything["runs"], everything["skippedPartitions"]) == (8, [])
    assert everything["firstPartitions"][0] == "raw_events/2024-05-01"
    async with database.read() as session:
        assert (
            await session.execute(select(func.count()).select_from(BackfillRecord))
        ).scalar_one() == 0


async def test_an_asset_folds_its_latest_statuses_into_ranges(
    gql: GraphQLRunner, database: Database
) -> None:
    async with database.write() as session:
        for job, key, state in [
            ("raw_events", "2024-01-02", RunState.SUCCESS),
            ("raw_events", "2024-01-03", RunState.SUCCESS),
            ("raw_events", "2024-01-05", RunState.FAILED),
            ("raw_events", "not-a-day", RunState.SUCCESS),  # no longer a partition: left out
            ("visits_summary", "default", RunState.RUNNING),
        ]:
            session.add(
                PartitionStateRecord(
                    job_name=job,
                    partition_key=key,
                    status=state,
                    run_id=None,
                    updated_at=gql.clock.now,
                )
            )
    fields = "partitionStatusRanges { status startKey endKey startIndex count }"
    data = await gql(
        f"""{{ raw: asset(name: "raw_events") {{ {fields} }}
               summary: asset(name: "visits_summary") {{ {fields} }} }}"""
    )
    ranges = data["raw"]["partitionStatusRanges"]
    assert [(r["status"], r["startKey"], r["endKey"], r["startIndex"]) for r in ranges[:4]] == [
        ("PENDING", "2024-01-01", "2024-01-01", 0),
        ("SUCCEEDED", "2024-01-02", "2024-01-03", 1),
        ("PENDING", "2024-01-04", "2024-01-04", 3),
        ("FAILED", "2024-01-05", "2024-01-05", 4),
    ]
    assert (ranges[4]["status"], ranges[4]["startKey"], len(ranges)) == ("PENDING", "2024-01-06", 5)
    last = date.fromisoformat(ranges[4]["endKey"])
    assert sum(r["count"] for r in ranges) == (last - date(2024, 1, 1)).days + 1
    assert data["summary"]["partitionStatusRanges"] == [
        {
            "status": "RUNNING",
            "startKey": "default",
            "endKey": "default",
            "startIndex": 0,
            "count": 1,
        }
    ]


async def test_an_asset_backfill_runs_and_reports_per_asset(
    gql: GraphQLRunner, database: Database, definitions: Definitions, clock: FrozenClock
) -> None:
    launched = await gql(
        LAUNCH_WITH_TARGET,
        {
            "input": {
                "target": target(["raw_events"], downstream=True),
                "partitions": {"range": {"start": "2024-02-27", "end": "2024-03-02"}},
            }
        },
    )
    payload = launched["launchBackfill"]
    assert payload["userErrors"] == []
    assert payload["backfill"]["target"] == {
        "job": None,
        "assets": {
            "names": ["raw_events"],
            "upstream": False,
            "downstream": True,
            "assets": ["raw_events", "daily_visits", "monthly_report", "visits_summary"],
        },
    }
    launcher = InlineLauncher(definitions, max_active=8)
    await drive(database, definitions, clock, launcher, DaemonState(plan_window=7))
    backfill = (await gql(READ, {"id": payload["backfill"]["id"]}))["backfill"]
    assert backfill["status"] == "COMPLETED_SUCCESS"
    # 5 days of raw events and visits, February and March reports, one summary
    assert backfill["counts"] == {
        "total": 13,
        "succeeded": 13,
        "skipped": 0,
        "failed": 0,
        "pending": 0,
    }
    assert [
        (r["startKey"], r["endKey"], r["startIndex"], r["count"])
        for r in backfill["partitionStatusRanges"]
    ] == [
        ("raw_events/2024-02-27", "raw_events/2024-03-02", 0, 5),
        ("daily_visits/2024-02-27", "daily_visits/2024-03-02", 5, 5),
        ("monthly_report/2024-02-01", "monthly_report/2024-03-01", 10, 2),
        ("visits_summary/default", "visits_summary/default", 12, 1),
    ]
    by_name = {a["name"]: a for a in backfill["assets"]}
    assert by_name["monthly_report"]["partitionStatusRanges"] == [
        {"status": "SUCCEEDED", "startKey": "2024-02-01", "endKey": "2024-03-01", "count": 2}
    ]
    assert [a["level"] for a in backfill["assets"]] == [0, 1, 2, 3]
    assert by_name["daily_visits"]["counts"] == {"total": 5, "succeeded": 5, "pending": 0}
    runs = backfill["runs"]["nodes"]
    assert {r["asset"] for r in runs} == set(by_name)
    assert all(r["job"] == r["asset"] for r in runs)
    latest = await gql('{ asset(name: "visits_summary") { latestStatuses { key status } } }')
    assert latest["asset"]["latestStatuses"] == [{"key": "default", "status": "SUCCESS"}]


async def test_reprocess_missing_works_per_asset_partition_across_cadences(
    gql: GraphQLRunner, database: Database, definitions: Definitions, clock: FrozenClock
) -> None:
    async def run(start: str, end: str) -> dict[str, Any]:
        launched = await gql(
            LAUNCH_WITH_TARGET,
            {
                "input": {
                    "target": target(["raw_events"], downstream=True),
                    "partitions": {"range": {"start": start, "end": end}},
                }
            },
        )
        backfill_id = launched["launchBackfill"]["backfill"]["id"]
        launcher = InlineLauncher(definitions, max_active=8)
        await drive(database, definitions, clock, launcher, DaemonState())
        backfill: dict[str, Any] = (await gql(READ, {"id": backfill_id}))["backfill"]
        return backfill

    await run("2024-03-30", "2024-03-31")
    # Two new days (April 1-2) and their April report run; March's days and report, and the
    # unpartitioned summary, already succeeded: under MISSING they are skipped.
    second = await run("2024-03-30", "2024-04-02")
    assert second["status"] == "COMPLETED_SUCCESS"
    by_name = {a["name"]: a["counts"] for a in second["assets"]}
    assert by_name["raw_events"] == {"total": 4, "succeeded": 2, "pending": 0}
    assert by_name["monthly_report"] == {"total": 2, "succeeded": 1, "pending": 0}
    assert by_name["visits_summary"] == {"total": 1, "succeeded": 0, "pending": 0}
    assert second["counts"]["skipped"] == 2 + 2 + 1 + 1
    ran = {(r["asset"], r["partitionKey"]) for r in second["runs"]["nodes"]}
    assert ("monthly_report", "2024-04-01") in ran and ("raw_events", "2024-03-30") not in ran
