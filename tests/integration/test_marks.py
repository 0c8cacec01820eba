"""Marking partitions by hand (``markPartitions``) against the real database.

The daemon's ticks are called directly with the inline launcher, which runs the jobs in this
process; the jobs of ``tests.defs`` append a line per execution to ``$BACKFILLER_TEST_MARKS``,
so "never executed" is judged by the jobs' own records.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx
import pytest
from sqlalchemy import func, select

from backfiller.config import AuthMode, Settings
from backfiller.daemon.ticks import DaemonState, launch_runs, plan_backfills
from backfiller.definitions.loading import Definitions
from backfiller.launchers import InlineLauncher
from backfiller.resolvers.context import Services
from backfiller.storage import Database
from backfiller.storage.mark_records import PartitionMarkRecord
from backfiller.storage.records import PartitionStateRecord
from backfiller.web.app import create_app
from tests.defs.assets import definitions as asset_definitions
from tests.integration.test_daemon_ticks import definitions, drive
from tests.support import FrozenClock, GraphQLRunner, launch

__all__ = ["definitions"]  # the fixture: the daemon tests' jobs

MARK = """
mutation($input: MarkPartitionsInput!) {
  markPartitions(input: $input) { marked runningPartitions userErrors { code field message } }
}
"""
MARKS = """
query($job: String!, $key: String) {
  partitionMarks(job: $job, partitionKey: $key) { id job partitionKey status reason actor }
}
"""
STRIP = """
query($name: String!) {
  job(name: $name) { partitionStatusRanges { status startKey endKey count } }
}
"""
BACKFILL = """
query($id: ID!) {
  backfill(id: $id) {
    status counts { total succeeded skipped }
    partitions(first: 20) { nodes { key status skipReason } }
  }
}
"""
AUDIT = """
{ auditLog(first: 20, operation: "markPartitions") {
    nodes { actor operation subject outcome codes message } } }
"""


def mark_input(
    target: str | dict[str, Any],
    *,
    keys: list[str] | None = None,
    start: str | None = None,
    end: str | None = None,
    status: str = "SUCCEEDED",
    reason: str = "produced out of band",
) -> dict[str, Any]:
    partitions: dict[str, Any] = (
        {"keys": keys} if keys is not None else {"range": {"start": start, "end": end}}
    )
    return {
        "target": {"job": target} if isinstance(target, str) else target,
        "partitions": partitions,
        "status": status,
        "reason": reason,
    }


async def mark(gql: GraphQLRunner, **kwargs: Any) -> dict[str, Any]:
    target = kwargs.pop("target")
    payload: dict[str, Any] = (await gql(MARK, {"input": mark_input(target, **kwargs)}))[
        "markPartitions"
    ]
    return payload


def executions(folder: Path) -> list[tuple[str, str]]:
    """(job, partition) of every execution the jobs recorded, sorted."""
    found = []
    for path in folder.glob("*.log"):
        for line in path.read_text().splitlines():
            parts = line.split()
            if parts[0] == "start":
                parts = parts[1:]
            elif parts[0] == "end":
                continue
            found.append((parts[0], parts[1]))
    return sorted(found)


@pytest.fixture
def records(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    folder = tmp_path / "executions"
    folder.mkdir()
    monkeypatch.setenv("BACKFILLER_TEST_MARKS", str(folder))
    return folder


async def count(database: Database, record: Any) -> int:
    async with database.read() as session:
        return int((await session.execute(select(func.count()).select_from(record))).scalar_one())


async def test_a_marked_success_is_skipped_by_a_missing_backfill_and_shown_as_such(
    gql: GraphQLRunner,
    database: Database,
    definitions: Definitions,
    clock: FrozenClock,
    records: Path,
) -> None:
    done = await mark(gql, target="steady", keys=["2024-01-02"], reason="loaded by hand")
    assert done == {"marked": 1, "runningPartitions": [], "userErrors": []}
    skipped = await mark(
        gql, target="steady", keys=["2024-01-04"], status="SKIPPED", reason="known-bad day"
    )
    assert skipped["marked"] == 1

    strip = (await gql(STRIP, {"name": "steady"}))["job"]["partitionStatusRanges"]
    assert [
        (r["status"], r["startKey"], r["count"]) for r in strip if r["status"] != "PENDING"
    ] == [
        ("SUCCEEDED", "2024-01-02", 1),
        ("SKIPPED", "2024-01-04", 1),
    ]

    backfill_id = await launch(gql, "steady", "2024-01-01", "2024-01-05")  # MISSING
    launcher = InlineLauncher(definitions, max_active=16)
    await drive(database, definitions, clock, launcher, DaemonState())
    # The jobs' own records: the marked partitions never executed.
    assert executions(records) == [
        ("steady", "2024-01-01"),
        ("steady", "2024-01-03"),
        ("steady", "2024-01-05"),
    ]
    backfill = (await gql(BACKFILL, {"id": backfill_id}))["backfill"]
    counts = backfill["counts"]
    assert (backfill["status"], counts["total"], counts["succeeded"], counts["skipped"]) == (
        "COMPLETED_SUCCESS",
        5,
        3,
        2,
    )
    reasons = {n["key"]: n["skipReason"] for n in backfill["partitions"]["nodes"]}
    assert reasons["2024-01-02"] == "ALREADY_SUCCEEDED"
    assert reasons["2024-01-04"] == "MARKED_SKIPPED"

    strip = (await gql(STRIP, {"name": "steady"}))["job"]["partitionStatusRanges"]
    assert [
        (r["status"], r["startKey"], r["endKey"]) for r in strip if r["status"] != "PENDING"
    ] == [
        ("SUCCEEDED", "2024-01-01", "2024-01-03"),
        ("SKIPPED", "2024-01-04", "2024-01-04"),
        ("SUCCEEDED", "2024-01-05", "2024-01-05"),
    ]
    history = (await gql(MARKS, {"job": "steady"}))["partitionMarks"]
    assert [(m["partitionKey"], m["status"], m["reason"]) for m in history] == [
        ("2024-01-04", "SKIPPED", "known-bad day"),
        ("2024-01-02", "SUCCEEDED", "loaded by hand"),
    ]
    one = (await gql(MARKS, {"job": "steady", "key": "2024-01-02"}))["partitionMarks"]
    assert [m["id"] for m in one] == [history[1]["id"]]

    audit = (await gql(AUDIT))["auditLog"]["nodes"]
    assert [(a["outcome"], a["subject"]) for a in audit] == [
        ("SUCCEEDED", "job steady"),
        ("SUCCEEDED", "job steady"),
    ]
    assert "known-bad day" in audit[0]["message"] and "skipped" in audit[0]["message"]
    assert "loaded by hand" in audit[1]["message"]


async def test_a_run_replaces_a_mark_and_all_reruns_a_marked_partition(
    gql: GraphQLRunner,
    database: Database,
    definitions: Definitions,
    clock: FrozenClock,
    records: Path,
) -> None:
    await mark(gql, target="steady", keys=["2024-02-01"], status="SKIPPED", reason="bad")
    await launch(gql, "steady", "2024-02-01", "2024-02-01", reprocess="ALL")
    await drive(database, definitions, clock, InlineLauncher(definitions), DaemonState())
    assert executions(records) == [("steady", "2024-02-01")]
    strip = (await gql(STRIP, {"name": "steady"}))["job"]["partitionStatusRanges"]
    assert [(r["status"], r["startKey"]) for r in strip if r["status"] != "PENDING"] == [
        ("SUCCEEDED", "2024-02-01")
    ]


async def test_marking_a_partition_that_a_backfill_runs_is_refused_and_changes_nothing(
    gql: GraphQLRunner, database: Database, definitions: Definitions, clock: FrozenClock
) -> None:
    await launch(gql, "noop", "2024-03-01", "2024-03-03")  # MISSING
    launcher = InlineLauncher(definitions, max_active=2, hold=True)
    state = DaemonState()
    await plan_backfills(database, definitions, clock, state)
    await launch_runs(database, definitions, clock, launcher, state)
    running = sorted(t.partition_key for t in launcher.submitted)
    assert running == ["2024-03-01", "2024-03-02"]

    refused = await mark(gql, target="noop", start="2024-02-28", end="2024-03-03")
    assert refused["marked"] == 0
    assert refused["runningPartitions"] == running
    assert [e["code"] for e in refused["userErrors"]] == ["PARTITIONS_RUNNING"]
    assert "2024-03-01" in refused["userErrors"][0]["message"]
    assert await count(database, PartitionMarkRecord) == 0

    # A pending partition of the running backfill (not claimed yet) may be marked; the
    # backfill then skips it.
    pending = await mark(gql, target="noop", keys=["2024-03-03"])
    assert pending["marked"] == 1
    launcher.release()
    await drive(database, definitions, clock, launcher, state)
    assert sorted(t.partition_key for t in launcher.submitted) == running

    audit = (await gql(AUDIT))["auditLog"]["nodes"]
    assert [(a["outcome"], a["codes"]) for a in audit] == [
        ("SUCCEEDED", []),
        ("REJECTED", ["PARTITIONS_RUNNING"]),
    ]


BAD_INPUTS: list[tuple[dict[str, Any], str, list[str] | None]] = [
    (mark_input("no_such_job", keys=["2024-01-01"]), "JOB_NOT_FOUND", ["target", "job"]),
    (mark_input("noop", keys=["2024-13-45"]), "INVALID_PARTITION_RANGE", None),
    (mark_input("noop", keys=["1999-01-01"]), "PARTITION_NOT_FOUND", None),
    (mark_input("noop", keys=[]), "EMPTY_SELECTION", None),
    (mark_input("noop", start="2024-01-05", end="2024-01-01"), "INVALID_PARTITION_RANGE", None),
    (mark_input("noop", keys=["2024-01-01"], reason="   "), "INVALID_ARGUMENT", ["reason"]),
]


@pytest.mark.parametrize(("given", "code", "field"), BAD_INPUTS)
async def test_bad_input_is_a_typed_error_and_marks_nothing(
    gql: GraphQLRunner,
    database: Database,
    given: dict[str, Any],
    code: str,
    field: list[str] | None,
) -> None:
    payload = (await gql(MARK, {"input": given}))["markPartitions"]
    assert payload["marked"] == 0
    assert code in [e["code"] for e in payload["userErrors"]], payload
    if field is not None:
        assert field in [e["field"] for e in payload["userErrors"]]
    assert await count(database, PartitionMarkRecord) == 0
    assert await count(database, PartitionStateRecord) == 0


async def test_bad_input_over_http_is_the_same_typed_error(
    database: Database, definitions: Definitions, clock: FrozenClock
) -> None:
    services = Services(database, definitions, Settings(auth_mode=AuthMode.NONE), clock)
    app = create_app(services)
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1") as client:
        for given, code, _ in BAD_INPUTS:
            response = await client.post(
                "/graphql/v1",
                content=json.dumps({"query": MARK, "variables": {"input": given}}),
                headers={"content-type": "application/json"},
            )
            body = response.json()
            assert response.status_code == 200 and "errors" not in body, body
            assert code in [e["code"] for e in body["data"]["markPartitions"]["userErrors"]]
        # A missing reason is refused by the schema itself: nothing runs.
        missing = dict(mark_input("noop", keys=["2024-01-01"]))
        del missing["reason"]
        response = await client.post(
            "/graphql/v1",
            content=json.dumps({"query": MARK, "variables": {"input": missing}}),
            headers={"content-type": "application/json"},
        )
        assert "reason" in response.json()["errors"][0]["message"]
    assert await count(database, PartitionMarkRecord) == 0


class TestAssets:
    @pytest.fixture
    def definitions(self) -> Definitions:
        return asset_definitions

    async def test_a_marked_upstream_success_unblocks_its_downstream(
        self,
        gql: GraphQLRunner,
        database: Database,
        definitions: Definitions,
        clock: FrozenClock,
        records: Path,
        monkeypatch: pytest.MonkeyPatch,
    ) -> None:
        # `top` of 2024-01-02 fails whenever it runs: it was produced out of band.
        monkeypatch.setenv("BACKFILLER_TEST_FAIL", "top/2024-01-02")
        target = {"assets": {"names": ["top"]}}
        done = await mark(gql, target=target, keys=["2024-01-02"], reason="copied by hand")
        assert done["marked"] == 1
        await launch(
            gql,
            {
                "target": {"assets": {"names": ["top"], "downstream": True}},
                "partitions": {"range": {"start": "2024-01-01", "end": "2024-01-02"}},
            },
        )
        await drive(database, definitions, clock, InlineLauncher(definitions), DaemonState())
        ran = executions(records)
        assert ("top", "2024-01-02") not in ran
        assert ran == sorted(
            [("top", "2024-01-01")]
            + [(a, d) for a in ("left", "right", "bottom") for d in ("2024-01-01", "2024-01-02")]
        )
        history = (await gql(MARKS, {"job": "top"}))["partitionMarks"]
        assert [(m["job"], m["partitionKey"]) for m in history] == [("top", "2024-01-02")]

    async def test_a_marked_skip_blocks_its_downstream_and_reads_as_skipped(
        self,
        gql: GraphQLRunner,
        database: Database,
        definitions: Definitions,
        clock: FrozenClock,
        records: Path,
    ) -> None:
        target = {"assets": {"names": ["top"]}}
        skipped = await mark(
            gql, target=target, keys=["2024-02-02"], status="SKIPPED", reason="bad day"
        )
        assert skipped["marked"] == 1
        await launch(
            gql,
            {
                "target": {"assets": {"names": ["top"], "downstream": True}},
                "partitions": {"range": {"start": "2024-02-01", "end": "2024-02-02"}},
            },
        )
        await drive(database, definitions, clock, InlineLauncher(definitions), DaemonState())
        assert executions(records) == sorted(
            (a, "2024-02-01") for a in ("top", "left", "right", "bottom")
        )
        data = await gql(
            '{ asset(name: "top") { latestStatuses { key status } '
            "partitionStatusRanges { status startKey } } }"
        )
        assert data["asset"]["latestStatuses"] == [
            {"key": "2024-02-01", "status": "SUCCESS"},
            {"key": "2024-02-02", "status": "SKIPPED"},
        ]
        assert {"status": "SKIPPED", "startKey": "2024-02-02"} in (
            data["asset"]["partitionStatusRanges"]
        )
