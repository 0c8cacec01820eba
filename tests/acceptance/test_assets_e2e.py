"""Asset backfills end to end: real server, daemon and worker processes, on SQLite and
PostgreSQL. Each execution records its start and end (``tests.defs.assets``); the tests check
that no downstream partition started before every upstream partition it depends on ended
successfully.
"""

from __future__ import annotations

from collections import defaultdict
from datetime import date, timedelta
from pathlib import Path
from typing import Any

import pytest

from tests.acceptance.daemon_support import adds_up, gql, read, wait_for, wait_status
from tests.support import LAUNCH_WITH_TARGET, LiveProcess, LiveServer, live_server

pytestmark = pytest.mark.acceptance

DEFINITIONS = "tests.defs.assets:definitions"

CANCEL = """
mutation($id: ID!) { cancelBackfill(input: {id: $id}) { userErrors { code message } } }
"""
RETRY = """
mutation($id: ID!) {
  retryBackfill(input: {id: $id}) { backfill { id } userErrors { code message } }
}
"""
FINAL = {"COMPLETED_SUCCESS", "COMPLETED_FAILED"}
TIMEOUT = 240  # seconds: a daemon takes long to start on a loaded 2-core machine
UPSTREAM = {
    "left": ["top"],
    "right": ["top"],
    "bottom": ["left", "right"],
    **{f"chain{i}": [f"chain{i - 1}"] for i in range(1, 10)},
}


class AssetDaemon(LiveProcess):
    def __init__(
        self, database_url: str, marks: Path, fail: str = "", lease: float | None = None
    ) -> None:
        args = ["daemon", "--database", database_url, "--definitions", DEFINITIONS]
        args += ["--workers", "2", "--grace-seconds", "1"]
        if lease is not None:
            args += ["--lease-timeout", str(lease)]
        env = {"BACKFILLER_TEST_MARKS": str(marks), "BACKFILLER_TEST_FAIL": fail}
        super().__init__(args, env=env)

    def kill(self) -> None:
        self.proc.kill()
        self.proc.wait(10)
        self.stop()


@pytest.fixture(scope="module")
def database_url(module_database_url: str) -> str:
    """The module's one database (one server start for the module)."""
    return module_database_url


class PatientServer(LiveServer):
    """A server given two minutes to start: a loaded 2-core CI machine can take that long."""

    def wait_ready(self, timeout: float = 120) -> None:
        super().wait_ready(timeout)


server = live_server(DEFINITIONS, scope="module", server=PatientServer)


@pytest.fixture
def marks(tmp_path: Path) -> Path:
    folder = tmp_path / "marks"
    folder.mkdir()
    return folder


def launch(server: LiveServer, names: list[str], start: str, end: str, **extra: Any) -> str:
    data = gql(
        server,
        LAUNCH_WITH_TARGET,
        {
            "input": {
                "target": {"assets": {"names": names, "downstream": True}},
                "partitions": {"range": {"start": start, "end": end}},
                "reprocess": "ALL",
                **extra,
            }
        },
    )["launchBackfill"]
    assert data["userErrors"] == [], data
    assert data["backfill"]["target"]["job"] is None
    backfill_id: str = data["backfill"]["id"]
    return backfill_id


Times = dict[tuple[str, str], list[int]]


def executions(marks: Path) -> tuple[Times, Times]:
    """The start times of each (asset, partition), and the end times of its successes."""
    starts: Times = defaultdict(list)
    ends: Times = defaultdict(list)
    for path in marks.glob("*.log"):
        for line in path.read_text().splitlines():
            what, asset, key, at = line.split()
            if what == "start":
                starts[(asset, key)].append(int(at))
            else:
                ends[(asset, key)].append(int(at))
    return starts, ends


def upstream_of(asset: str, key: str) -> list[tuple[str, str]]:
    if asset == "monthly_report":
        first = date.fromisoformat(key)
        following = (first + timedelta(days=32)).replace(day=1)
        days = (following - first).days
        return [("events", (first + timedelta(days=i)).isoformat()) for i in range(days)]
    return [(up, key) for up in UPSTREAM.get(asset, [])]


def assert_dependency_order(marks: Path, in_backfill: set[tuple[str, str]]) -> int:
    """No start before each upstream partition (within the backfill) ended successfully."""
    starts, ends = executions(marks)
    checked = 0
    for (asset, key), times in starts.items():
        for up in upstream_of(asset, key):
            if up not in in_backfill:
                continue
            assert up in ends, f"{asset}/{key} started but {up} never succeeded"
            assert min(ends[up]) < min(times), f"{asset}/{key} started before {up} ended"
            checked += 1
    return checked


def days(start: str, n: int) -> list[str]:
    first = date.fromisoformat(start)
    return [(first + timedelta(days=i)).isoformat() for i in range(n)]


def test_a_diamond_and_a_ten_level_chain_complete_in_dependency_order(
    server: LiveServer, database_url: str, marks: Path
) -> None:
    daemon = AssetDaemon(database_url, marks)
    try:
        diamond = launch(server, ["top"], "2024-01-01", "2024-01-04")
        chain = launch(server, ["chain0"], "2024-01-01", "2024-01-03")
        for backfill_id, total in ((diamond, 16), (chain, 30)):
            done = wait_status(server, backfill_id, FINAL, TIMEOUT)
            assert done["status"] == "COMPLETED_SUCCESS", done
            assert done["counts"]["total"] == done["counts"]["succeeded"] == total
    finally:
        daemon.stop()
    keys = days("2024-01-01", 4)
    inside = {(a, k) for a in ("top", "left", "right", "bottom") for k in keys}
    inside |= {(f"chain{i}", k) for i in range(10) for k in keys[:3]}
    starts, _ = executions(marks)
    assert set(starts) == inside and all(len(t) == 1 for t in starts.values())
    assert assert_dependency_order(marks, inside) == 4 * 4 + 9 * 3


def test_daily_to_monthly_runs_each_month_after_its_days(
    server: LiveServer, database_url: str, marks: Path
) -> None:
    daemon = AssetDaemon(database_url, marks)
    try:
        backfill_id = launch(server, ["events"], "2024-01-30", "2024-02-02")
        done = wait_status(server, backfill_id, FINAL, TIMEOUT)
    finally:
        daemon.stop()
    assert done["status"] == "COMPLETED_SUCCESS", done
    assert done["counts"]["total"] == 4 + 2
    inside = {("events", k) for k in days("2024-01-30", 4)}
    starts, _ = executions(marks)
    assert set(starts) == inside | {
        ("monthly_report", "2024-01-01"),
        ("monthly_report", "2024-02-01"),
    }
    assert assert_dependency_order(marks, inside) == 2 + 2


def test_an_upstream_failure_skips_exactly_its_downstream(
    server: LiveServer, database_url: str, marks: Path
) -> None:
    daemon = AssetDaemon(database_url, marks, fail="left/2024-01-02,chain3/2024-01-01")
    try:
        diamond = launch(server, ["top"], "2024-01-01", "2024-01-03")
        chain = launch(server, ["chain0"], "2024-01-01", "2024-01-02")
        first = wait_status(server, diamond, FINAL, TIMEOUT)
        second = wait_status(server, chain, FINAL, TIMEOUT)
    finally:
        daemon.stop()
    assert first["status"] == "COMPLETED_FAILED"
    assert first["counts"] | {} == {
        **first["counts"],
        "total": 12,
        "succeeded": 10,
        "failed": 1,
        "skipped": 1,
    }
    assert second["status"] == "COMPLETED_FAILED"
    # chain3/2024-01-01 failed: chain4..chain9 of that day are skipped, the other day runs.
    assert (second["counts"]["succeeded"], second["counts"]["failed"]) == (3 + 10, 1)
    assert second["counts"]["skipped"] == 6
    starts, _ = executions(marks)
    assert ("bottom", "2024-01-02") not in starts
    assert len(starts[("left", "2024-01-02")]) == 2  # its retry, then the failure
    assert not any((f"chain{i}", "2024-01-01") in starts for i in range(4, 10))
    skipped = gql(
        server,
        """query($id: ID!) { backfill(id: $id) { partitions(first: 20, statuses: [SKIPPED]) {
             nodes { key status skipReason } } } }""",
        {"id": diamond},
    )
    nodes = skipped["backfill"]["partitions"]["nodes"]
    assert [(n["key"], n["skipReason"]) for n in nodes] == [
        ("bottom/2024-01-02", "UPSTREAM_FAILED")
    ]

    # Retry: only the failure and what it skipped run again, in dependency order.
    again = marks / "retry"
    again.mkdir()
    retried = gql(server, RETRY, {"id": diamond})["retryBackfill"]
    assert retried["userErrors"] == []
    daemon = AssetDaemon(database_url, again)
    try:
        done = wait_status(server, retried["backfill"]["id"], FINAL, TIMEOUT)
    finally:
        daemon.stop()
    assert done["status"] == "COMPLETED_SUCCESS", done
    assert done["counts"]["total"] == done["counts"]["succeeded"] == 2
    starts, _ = executions(again)
    assert set(starts) == {("left", "2024-01-02"), ("bottom", "2024-01-02")}
    assert assert_dependency_order(again, set(starts)) == 1


def test_cancel_stops_the_graph(server: LiveServer, database_url: str, marks: Path) -> None:
    daemon = AssetDaemon(database_url, marks)
    try:
        backfill_id = launch(
            server, ["chain0"], "2024-01-01", "2024-01-10", runConfig={"seconds": 0.3}
        )
        wait_for("a run", lambda: read(server, backfill_id)["counts"]["succeeded"] >= 2, TIMEOUT)
        assert gql(server, CANCEL, {"id": backfill_id})["cancelBackfill"]["userErrors"] == []
        done = wait_status(server, backfill_id, {"CANCELED"}, TIMEOUT)
    finally:
        daemon.stop()
    counts = done["counts"]
    assert adds_up(counts) and counts["canceled"] > 0
    assert counts["pending"] == counts["queued"] == counts["running"] == 0


def test_kill_9_of_the_daemon_mid_graph_then_a_new_daemon_finishes_it(
    server: LiveServer, database_url: str, marks: Path
) -> None:
    # An 8 s lease (not the default 30 s): the second daemon takes the graph over once the
    # first one's lease has expired.
    first = AssetDaemon(database_url, marks, lease=8)
    backfill_id = launch(server, ["top"], "2024-01-01", "2024-01-06", runConfig={"seconds": 0.1})
    try:
        wait_for("progress", lambda: read(server, backfill_id)["counts"]["succeeded"] >= 4, TIMEOUT)
    finally:
        first.kill()
    second = AssetDaemon(database_url, marks, lease=8)
    try:
        done = wait_status(server, backfill_id, FINAL, TIMEOUT)
    finally:
        second.stop()
    assert done["status"] == "COMPLETED_SUCCESS", done
    assert done["counts"]["succeeded"] == done["counts"]["total"] == 24
    inside = {(a, k) for a in ("top", "left", "right", "bottom") for k in days("2024-01-01", 6)}
    _, ends = executions(marks)
    assert set(ends) == inside
    assert assert_dependency_order(marks, inside) == 4 * 6
