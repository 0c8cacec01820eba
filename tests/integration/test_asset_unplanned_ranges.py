"""Before the daemon plans an asset backfill, each asset's status ranges already cover all its
partitions (PENDING), as the backfill's own ranges do: a client can draw every asset's strip
from the first read."""

from __future__ import annotations

from tests.integration.test_assets_api import READ, target
from tests.support import LAUNCH_WITH_TARGET, GraphQLRunner


async def test_unplanned_partitions_are_a_pending_range_of_each_asset(gql: GraphQLRunner) -> None:
    launched = await gql(
        LAUNCH_WITH_TARGET,
        {
            "input": {
                "target": target(["raw_events"], downstream=True),
                "partitions": {"range": {"start": "2024-02-27", "end": "2024-03-02"}},
            }
        },
    )
    assert launched["launchBackfill"]["userErrors"] == []
    backfill = (await gql(READ, {"id": launched["launchBackfill"]["backfill"]["id"]}))["backfill"]
    per_asset = {
        a["name"]: [
            (r["status"], r["startKey"], r["endKey"], r["count"])
            for r in a["partitionStatusRanges"]
        ]
        for a in backfill["assets"]
    }
    assert per_asset == {
        "raw_events": [("PENDING", "2024-02-27", "2024-03-02", 5)],
        "daily_visits": [("PENDING", "2024-02-27", "2024-03-02", 5)],
        "monthly_report": [("PENDING", "2024-02-01", "2024-03-01", 2)],
        "visits_summary": [("PENDING", "default", "default", 1)],
    }
    # The backfill's ranges are the assets' ones, keyed asset/partition, indexed across them.
    assert [
        (r["status"], r["startKey"], r["endKey"], r["startIndex"], r["count"])
        for r in backfill["partitionStatusRanges"]
    ] == [
        ("PENDING", "raw_events/2024-02-27", "raw_events/2024-03-02", 0, 5),
        ("PENDING", "daily_visits/2024-02-27", "daily_visits/2024-03-02", 5, 5),
        ("PENDING", "monthly_report/2024-02-01", "monthly_report/2024-03-01", 10, 2),
        ("PENDING", "visits_summary/default", "visits_summary/default", 12, 1),
    ]
