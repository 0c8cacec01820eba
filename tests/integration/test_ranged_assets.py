"""Ranged runs of assets with a backfill policy, in asset backfills, tick by tick against the
real database: chunks of ready consecutive partitions, held while a neighbour's upstream is not
done, downstream partitions released per partition when their range ends."""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest
from sqlalchemy import select

from backfiller.daemon.ticks import DaemonState
from backfiller.definitions.loading import Definitions
from backfiller.domain import RunState
from backfiller.launchers import InlineLauncher
from backfiller.storage import Database
from backfiller.storage.records import RunRecord
from tests.integration import ranged_asset_defs
from tests.integration.test_daemon_ticks import adds_up, drive
from tests.support import FrozenClock, GraphQLRunner, launch

READ = """
query($id: ID!) {
  backfill(id: $id) {
    status
    counts { total pending queued running succeeded failed canceled skipped }
    runs(first: 100) { nodes { asset partitionKey partitionKeys status } }
  }
}
"""


@pytest.fixture
def definitions() -> Definitions:
    ranged_asset_defs.executions.clear()
    return ranged_asset_defs.definitions


async def launch_assets(gql: GraphQLRunner, root: str, start: str, end: str) -> dict[str, Any]:
    target = {"assets": {"names": [root], "downstream": True}}
    partitions = {"range": {"start": start, "end": end}}
    return {"id": await launch(gql, {"target": target, "partitions": partitions})}


async def read(gql: GraphQLRunner, backfill_id: str) -> dict[str, Any]:
    backfill: dict[str, Any] = (await gql(READ, {"id": backfill_id}))["backfill"]
    assert adds_up(backfill["counts"])
    return backfill


def days(first: int, last: int) -> tuple[str, ...]:
    return tuple(f"2024-01-{d:02d}" for d in range(first, last + 1))


def ran(asset: str) -> list[tuple[str, ...]]:
    return [keys for name, keys in ranged_asset_defs.executions if name == asset]


async def test_a_single_run_root_runs_once_and_its_downstream_per_partition_after_it(
    gql: GraphQLRunner, database: Database, definitions: Definitions, clock: FrozenClock
) -> None:
    launched = await launch_assets(gql, "rebuilt", "2024-01-01", "2024-01-10")
    await drive(database, definitions, clock, InlineLauncher(definitions), DaemonState())
    assert ran("rebuilt") == [days(1, 10)]
    assert sorted(ran("checked")) == [(d,) for d in days(1, 10)]
    first_checked = [n for n, _ in ranged_asset_defs.executions].index("checked")
    assert first_checked > [n for n, _ in ranged_asset_defs.executions].index("rebuilt")
    backfill = await read(gql, launched["id"])
    assert backfill["status"] == "COMPLETED_SUCCESS" and backfill["counts"]["succeeded"] == 20
    ranged = [r for r in backfill["runs"]["nodes"] if r["asset"] == "rebuilt"]
    assert [(r["partitionKey"], r["partitionKeys"]) for r in ranged] == [
        ("2024-01-01", list(days(1, 10)))
    ]


async def test_a_ranged_asset_waits_for_whole_chunks_of_a_per_partition_upstream(
    gql: GraphQLRunner, database: Database, definitions: Definitions, clock: FrozenClock
) -> None:
    """``raw`` runs 3 partitions at a time (the launcher's capacity): ``loaded`` (4 per run)
    still runs 4, 4 and 2 days, and ``report`` runs each day once its range has ended."""
    launched = await launch_assets(gql, "raw", "2024-01-01", "2024-01-10")
    await drive(
        database, definitions, clock, InlineLauncher(definitions, max_active=3), DaemonState()
    )
    assert ran("loaded") == [days(1, 4), days(5, 8), days(9, 10)]
    order = [(n, k) for n, keys in ranged_asset_defs.executions for k in keys]
    for day in days(1, 10):
        assert (
            order.index(("raw", day)) < order.index(("loaded", day)) < order.index(("report", day))
        )
    backfill = await read(gql, launched["id"])
    assert backfill["status"] == "COMPLETED_SUCCESS" and backfill["counts"]["succeeded"] == 30
    async with database.read() as session:
        rows = (await session.execute(select(RunRecord.job_name, RunRecord.status))).all()
    assert Counter(rows) == {
        ("raw", RunState.SUCCESS): 10,
        ("loaded", RunState.SUCCESS): 10,
        ("report", RunState.SUCCESS): 10,
    }


async def test_asset_shows_its_policy(gql: GraphQLRunner) -> None:
    data = await gql(
        """query {
          loaded: asset(name: "loaded") { backfillPolicy { singleRun maxPartitionsPerRun } }
          raw: asset(name: "raw") { backfillPolicy { singleRun } }
        }"""
    )
    assert data["loaded"]["backfillPolicy"] == {"singleRun": False, "maxPartitionsPerRun": 4}
    assert data["raw"]["backfillPolicy"] is None


async def test_the_preview_counts_a_ranged_assets_runs(
    gql: GraphQLRunner, database: Database, definitions: Definitions, clock: FrozenClock
) -> None:
    await launch_assets(gql, "raw", "2024-01-05", "2024-01-05")
    await drive(database, definitions, clock, InlineLauncher(definitions), DaemonState())
    data = await gql(
        """mutation($input: LaunchBackfillInput!) {
          previewBackfill(input: $input) {
            preview { runs rangedRuns assets { name runs skipped rangedRuns } }
            userErrors { message }
          }
        }""",
        {
            "input": {
                "target": {"assets": {"names": ["raw"], "downstream": True}},
                "partitions": {"range": {"start": "2024-01-01", "end": "2024-01-10"}},
                "reprocess": "MISSING",
            }
        },
    )
    preview = data["previewBackfill"]["preview"]
    # 2024-01-05 ran for every asset: 1-4 and 6-10 are left, `loaded` in runs of 4, 4 and 1.
    assert preview["assets"] == [
        {"name": "raw", "runs": 9, "skipped": 1, "rangedRuns": None},
        {"name": "loaded", "runs": 9, "skipped": 1, "rangedRuns": 3},
        {"name": "report", "runs": 9, "skipped": 1, "rangedRuns": None},
    ]
    assert preview["runs"] == 27 and preview["rangedRuns"] == 9 + 3 + 9
