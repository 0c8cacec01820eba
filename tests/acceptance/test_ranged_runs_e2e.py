"""Ranged runs end to end: a real server, daemon and worker processes, on SQLite and PostgreSQL.

The jobs (``ranged_defs``) record every execution (start, end, the keys and window they got)
and lock each of their partitions while they run; each test compares that with the service's
records: runs with their ``partitionKeys``, per-partition counts and statuses.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from datetime import date, timedelta
from pathlib import Path
from typing import Any

import pytest

from backfiller.storage.migrations import upgrade_database
from tests.acceptance.daemon_support import adds_up, gql, launch, wait_status
from tests.conftest import _truncate_postgres
from tests.support import LiveProcess, LiveServer

pytestmark = pytest.mark.acceptance

DEFINITIONS = "tests.acceptance.ranged_defs:definitions"
FINAL = {"COMPLETED_SUCCESS", "COMPLETED_FAILED"}
TIMEOUT = 120
READ = """
query($id: ID!) {
  backfill(id: $id) {
    id status
    counts { total pending queued running succeeded failed canceled skipped }
    partitionStatusRanges { status startKey endKey count }
    runs(first: 100) { nodes { id partitionKey partitionKeys partitionCount attempt status } }
  }
}
"""
RETRY = """
mutation($id: ID!) {
  retryBackfill(input: {id: $id}) { backfill { id } userErrors { code message } }
}
"""


@pytest.fixture(scope="module")
def database_url(tmp_path_factory: pytest.TempPathFactory, pg_template_url: str | None) -> str:
    if pg_template_url is not None:
        _truncate_postgres(pg_template_url)
        return pg_template_url
    url = f"sqlite:///{tmp_path_factory.mktemp('ranged') / 'backfiller.db'}"
    upgrade_database(url)
    return url


@pytest.fixture(scope="module")
def marks(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("ranged-marks")


@pytest.fixture(scope="module")
def server(database_url: str, marks: Path) -> Iterator[LiveServer]:
    live = LiveServer(database_url, DEFINITIONS)
    args = ["daemon", "--database", database_url, "--definitions", DEFINITIONS]
    daemon = LiveProcess(
        [*args, "--workers", "2", "--grace-seconds", "1"],
        env={"BACKFILLER_TEST_MARKS": str(marks)},
    )
    # Started once for the module, and ready before the first test's clock starts.
    assert "running with" in daemon.output_once_it_says("running with", timeout=90)
    yield live
    daemon.stop()
    live.stop()


@dataclass(frozen=True)
class Execution:
    job: str
    run_id: str
    attempt: int
    keys: tuple[str, ...]
    window: str
    ended: bool


def executions(marks: Path, job: str) -> list[Execution]:
    """Every execution of ``job``, in start order; no execution ever overlapped another."""
    starts: list[tuple[int, list[str]]] = []
    ends: set[tuple[str, str]] = set()
    for path in marks.glob("*.log"):
        for line in path.read_text().splitlines():
            what, name, run_id, attempt, keys, window, at = line.split()
            assert what != "overlap", line
            if name != job:
                continue
            if what == "start":
                starts.append((int(at), [run_id, attempt, keys, window]))
            else:
                ends.add((run_id, attempt))
    return [
        Execution(job, r, int(a), tuple(k.split(",")), w, (r, a) in ends)
        for _, (r, a, k, w) in sorted(starts)
    ]


def days(start: str, n: int) -> tuple[str, ...]:
    first = date.fromisoformat(start)
    return tuple((first + timedelta(days=i)).isoformat() for i in range(n))


def finish(server: LiveServer, backfill_id: str) -> dict[str, Any]:
    wait_status(server, backfill_id, FINAL, TIMEOUT)
    backfill: dict[str, Any] = gql(server, READ, {"id": backfill_id})["backfill"]
    assert adds_up(backfill["counts"])
    return backfill


def same_runs(backfill: dict[str, Any], found: list[Execution]) -> None:
    """The service's runs are the executions: same ids, attempts and keys."""
    recorded = {
        (r["id"], r["attempt"], tuple(r["partitionKeys"])) for r in backfill["runs"]["nodes"]
    }
    assert recorded == {(e.run_id, e.attempt, e.keys) for e in found}
    for run in backfill["runs"]["nodes"]:
        assert run["partitionKey"] == run["partitionKeys"][0]
        assert run["partitionCount"] == len(run["partitionKeys"])


def test_single_run_over_ten_days_runs_once_with_ten_keys(server: LiveServer, marks: Path) -> None:
    backfill = finish(server, launch(server, "whole", "2024-01-01", "2024-01-10"))
    found = executions(marks, "whole")
    assert [(e.keys, e.window, e.ended) for e in found] == [
        (days("2024-01-01", 10), "2024-01-01T00/2024-01-11T00", True)
    ]
    same_runs(backfill, found)
    assert backfill["status"] == "COMPLETED_SUCCESS"
    assert backfill["counts"]["succeeded"] == 10
    assert backfill["partitionStatusRanges"] == [
        {"status": "SUCCEEDED", "startKey": "2024-01-01", "endKey": "2024-01-10", "count": 10}
    ]


def test_multi_run_of_four_over_ten_days_runs_three_times(server: LiveServer, marks: Path) -> None:
    backfill = finish(server, launch(server, "fours", "2024-01-01", "2024-01-10"))
    found = executions(marks, "fours")
    assert sorted(e.keys for e in found) == [
        days("2024-01-01", 4),
        days("2024-01-05", 4),
        days("2024-01-09", 2),
    ]
    same_runs(backfill, found)
    assert backfill["counts"]["succeeded"] == 10


def test_a_failing_range_fails_its_partitions_and_a_retry_reruns_them(
    server: LiveServer, marks: Path
) -> None:
    flag = marks / "fail-flaky"
    flag.touch()
    first = finish(server, launch(server, "flaky", "2024-02-01", "2024-02-06"))
    assert first["status"] == "COMPLETED_FAILED"
    assert first["counts"]["failed"] == 6
    assert [r["status"] for r in first["partitionStatusRanges"]] == ["FAILED"]
    # Its retry policy ran each range twice: attempts 1 and 2, all failed.
    failed = executions(marks, "flaky")
    assert sorted((e.attempt, e.keys, e.ended) for e in failed) == [
        (1, days("2024-02-01", 4), False),
        (1, days("2024-02-05", 2), False),
        (2, days("2024-02-01", 4), False),
        (2, days("2024-02-05", 2), False),
    ]
    same_runs(first, failed)
    flag.unlink()
    retried = gql(server, RETRY, {"id": first["id"]})
    assert retried["retryBackfill"]["userErrors"] == []
    second = finish(server, retried["retryBackfill"]["backfill"]["id"])
    assert second["status"] == "COMPLETED_SUCCESS" and second["counts"]["succeeded"] == 6
    again = [e for e in executions(marks, "flaky") if e not in failed]
    assert sorted(e.keys for e in again) == [days("2024-02-01", 4), days("2024-02-05", 2)]
    assert all(e.ended for e in again)
    same_runs(second, again)


def test_missing_skips_already_succeeded_partitions_inside_a_chunk(
    server: LiveServer, marks: Path
) -> None:
    for key in ("2024-03-03", "2024-03-06"):
        finish(server, launch(server, "missing", key, key))
    before = executions(marks, "missing")
    backfill = finish(
        server, launch(server, "missing", "2024-03-01", "2024-03-08", reprocess="MISSING")
    )
    found = [e for e in executions(marks, "missing") if e not in before]
    assert sorted(e.keys for e in found) == [
        days("2024-03-01", 2),
        days("2024-03-04", 2),
        days("2024-03-07", 2),
    ]
    same_runs(backfill, found)
    assert backfill["counts"]["succeeded"] == 6 and backfill["counts"]["skipped"] == 2
