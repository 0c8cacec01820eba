"""A partition that another backfill is running waits for it, and the API says so.

Two overlapping backfills against the real database (SQLite or PostgreSQL), the daemon's ticks
called directly with a launcher that holds its runs: the second backfill's preview and its
partitions name the first backfill's active runs they wait for.
"""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest

from backfiller.config import AuthMode, Settings
from backfiller.daemon.ticks import DaemonState, launch_runs, plan_backfills
from backfiller.definitions.loading import Definitions
from backfiller.launchers import InlineLauncher
from backfiller.resolvers.context import Services
from backfiller.storage import Database
from backfiller.web.app import create_app
from backfiller_client import (
    AsyncClient,
    BackfillRequest,
    PartitionRange,
    RunStatus,
    WaitingPartition,
)
from backfiller_client._parse import preview as parse_preview
from backfiller_client.cli._output import Output, plain
from backfiller_client.cli.backfills import print_preview
from tests.defs.assets import definitions as asset_definitions
from tests.integration.test_assets_claims import launch_diamond
from tests.integration.test_daemon_ticks import definitions, drive
from tests.support import FrozenClock, GraphQLRunner, launch

__all__ = ["definitions"]  # the fixture: the daemon tests' jobs

PREVIEW = """
mutation($input: LaunchBackfillInput!) {
  previewBackfill(input: $input) {
    preview { runs skipped waiting
      waitingPartitions { key waitingFor { runId runStatus backfillId backfill { id } } } }
    userErrors { code }
  }
}
"""
PARTITIONS = """
query($id: ID!) {
  backfill(id: $id) {
    partitions(first: 10) {
      nodes { key status skipReason waitingFor { runId runStatus backfillId } }
    }
  }
}
"""


async def partitions(gql: GraphQLRunner, backfill_id: str) -> list[dict[str, Any]]:
    data = await gql(PARTITIONS, {"id": backfill_id})
    nodes: list[dict[str, Any]] = data["backfill"]["partitions"]["nodes"]
    return nodes


async def test_the_preview_and_the_partitions_say_which_run_they_wait_for(
    gql: GraphQLRunner, database: Database, definitions: Definitions, clock: FrozenClock
) -> None:
    first = await launch(gql, "noop", "2024-01-01", "2024-01-05", reprocess="ALL")
    launcher = InlineLauncher(definitions, max_active=16, hold=True)
    state = DaemonState()
    await plan_backfills(database, definitions, clock, state)
    await launch_runs(database, definitions, clock, launcher, state)
    runs = {t.partition_key: f"run_{t.run_id}" for t in launcher.submitted}
    assert len(runs) == 5

    second_input = {
        "target": {"job": "noop"},
        "partitions": {"range": {"start": "2024-01-01", "end": "2024-01-06"}},
    }
    preview = (await gql(PREVIEW, {"input": second_input}))["previewBackfill"]["preview"]
    assert (preview["runs"], preview["skipped"], preview["waiting"]) == (6, 0, 5)
    assert [
        (w["key"], w["waitingFor"]["runId"], w["waitingFor"]["backfillId"])
        for w in preview["waitingPartitions"]
    ] == [(k, runs[k], first) for k in sorted(runs)]
    assert {w["waitingFor"]["runStatus"] for w in preview["waitingPartitions"]} == {"QUEUED"}
    assert {w["waitingFor"]["backfill"]["id"] for w in preview["waitingPartitions"]} == {first}

    second = await launch(gql, "noop", "2024-01-01", "2024-01-06")
    await plan_backfills(database, definitions, clock, state)
    await launch_runs(database, definitions, clock, launcher, state)
    nodes = await partitions(gql, second)
    waiting = {n["key"]: n["waitingFor"] for n in nodes if n["waitingFor"] is not None}
    assert {k: w["runId"] for k, w in waiting.items()} == runs
    assert {(w["backfillId"], w["runStatus"]) for w in waiting.values()} == {(first, "QUEUED")}
    assert all(n["status"] == "PENDING" for n in nodes if n["key"] in runs)
    last = next(n for n in nodes if n["key"] == "2024-01-06")
    assert last["status"] == "QUEUED" and last["waitingFor"] is None
    # The first backfill's own partitions wait for nothing: they are the runs.
    assert all(n["waitingFor"] is None for n in await partitions(gql, first))

    launcher.release()
    await drive(database, definitions, clock, launcher, state)
    nodes = await partitions(gql, second)
    assert [n["waitingFor"] for n in nodes] == [None] * 6
    # Under MISSING, the partitions the first backfill ran meanwhile were skipped.
    assert sorted(n["key"] for n in nodes if n["skipReason"] == "ALREADY_SUCCEEDED") == sorted(runs)
    preview = (await gql(PREVIEW, {"input": second_input}))["previewBackfill"]["preview"]
    assert (preview["waiting"], preview["waitingPartitions"]) == (0, [])


class TestAssets:
    @pytest.fixture
    def definitions(self) -> Definitions:
        return asset_definitions

    async def test_an_asset_partition_waits_for_the_other_backfills_run(
        self, gql: GraphQLRunner, database: Database, definitions: Definitions, clock: FrozenClock
    ) -> None:
        first = await launch_diamond(gql, "2024-01-01", "2024-01-02")
        launcher = InlineLauncher(definitions, max_active=16, hold=True)
        state = DaemonState()
        await plan_backfills(database, definitions, clock, state)
        await launch_runs(database, definitions, clock, launcher, state)
        runs = {f"top/{t.partition_key}": f"run_{t.run_id}" for t in launcher.submitted}
        assert sorted(runs) == ["top/2024-01-01", "top/2024-01-02"]
        target = {"assets": {"names": ["top"], "downstream": True}}
        second_input = {
            "target": target,
            "partitions": {"range": {"start": "2024-01-01", "end": "2024-01-02"}},
        }
        preview = (await gql(PREVIEW, {"input": second_input}))["previewBackfill"]["preview"]
        assert preview["waiting"] == 2
        assert {w["key"]: w["waitingFor"]["runId"] for w in preview["waitingPartitions"]} == runs

        second = await launch_diamond(gql, "2024-01-01", "2024-01-02")
        await plan_backfills(database, definitions, clock, state)
        await launch_runs(database, definitions, clock, launcher, state)
        nodes = await partitions(gql, second)
        waiting = {n["key"]: n["waitingFor"] for n in nodes if n["waitingFor"] is not None}
        assert {k: w["runId"] for k, w in waiting.items()} == runs
        assert {w["backfillId"] for w in waiting.values()} == {first}


async def test_the_python_client_and_the_cli_say_which_run_a_partition_would_wait_for(
    gql: GraphQLRunner, database: Database, definitions: Definitions, clock: FrozenClock
) -> None:
    first = await launch(gql, "noop", "2024-01-01", "2024-01-03", reprocess="ALL")
    launcher = InlineLauncher(definitions, max_active=16, hold=True)
    state = DaemonState()
    await plan_backfills(database, definitions, clock, state)
    await launch_runs(database, definitions, clock, launcher, state)
    runs = {t.partition_key: f"run_{t.run_id}" for t in launcher.submitted}

    # Auth off (loopback): the client's token handling is tested with it.
    services = Services(database, definitions, Settings(auth_mode=AuthMode.NONE))
    transport = httpx.ASGITransport(app=create_app(services))
    async with AsyncClient("http://127.0.0.1", transport=transport) as client:
        found = await client.preview_backfill(
            BackfillRequest(job="noop", partitions=PartitionRange("2024-01-02", "2024-01-04"))
        )
    assert (found.runs, found.waiting) == (3, 2)
    assert found.waiting_partitions == tuple(
        WaitingPartition(key=k, run_id=runs[k], run_status=RunStatus.QUEUED, backfill_id=first)
        for k in ("2024-01-02", "2024-01-03")
    )

    output = Output(json_mode=False)
    with output.out.capture() as captured:
        print_preview(output, found)
    assert (
        f"2 would wait for runs of other backfills: 2024-01-02 ({runs['2024-01-02']} of {first}, "
        f"QUEUED), 2024-01-03 ({runs['2024-01-03']} of {first}, QUEUED)"
    ) in captured.get()
    assert json.loads(json.dumps(plain(found)))["waiting"] == 2
    launcher.release()


def test_a_preview_from_a_server_without_waits_waits_for_nothing() -> None:
    older = {
        "job": "noop",
        "total": 1,
        "runs": 1,
        "skipped": 0,
        "firstPartitions": ["2024-01-01"],
        "skippedPartitions": [],
    }
    found = parse_preview(older)
    assert (found.waiting, found.waiting_partitions) == (0, ())
