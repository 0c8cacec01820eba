"""Ranged runs end to end: a real server, daemon and worker processes, on SQLite and PostgreSQL.

The jobs (``ranged_defs``) record every execution (start, end, the keys and window they got)
and lock each of their partitions while they run; each test compares that with the service's
records: runs with their ``partitionKeys``, per-partition counts and statuses.
"""

from __future__ import annotations

import os
import signal
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import date, timedelta
from pathlib import Path
from typing import Any

import pytest

from tests.acceptance.daemon_support import Daemon, adds_up, gql, launch, wait_for, wait_status
from tests.support import LiveProcess, LiveServer, live_server

pytestmark = pytest.mark.acceptance

DEFINITIONS = "tests.acceptance.ranged_defs:definitions"
FINAL = {"COMPLETED_SUCCESS", "COMPLETED_FAILED"}
TIMEOUT = 120
LEASE = ["--lease-timeout", "3", "--heartbeat-seconds", "0.2"]
READ = """
query($id: ID!) {
  backfill(id: $id) {
    id status
    counts { total pending queued running succeeded failed canceled skipped }
    partitionStatusRanges { status startKey endKey count }
    runs(first: 100) {
      nodes { id asset partitionKey partitionKeys partitionCount attempt status }
    }
  }
}
"""
RETRY = """
mutation($id: ID!) {
  retryBackfill(input: {id: $id}) { backfill { id } userErrors { code message } }
}
"""


@pytest.fixture(scope="module")
def database_url(module_database_url: str) -> str:
    """The module's one database (one server start for the module)."""
    return module_database_url


@pytest.fixture(scope="module")
def marks(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("ranged-marks")


class RangedDaemon(Daemon):
    def __init__(self, database_url: str, marks: Path) -> None:
        args = ["daemon", "--database", database_url, "--definitions", DEFINITIONS]
        args += ["--workers", "2", "--grace-seconds", "1", *LEASE]
        args += ["--results-dir", str(marks.parent / f"{marks.name}-results")]
        LiveProcess.__init__(self, args, env={"BACKFILLER_TEST_MARKS": str(marks)})

    def wait_running(self) -> None:
        assert "running with" in self.output_once_it_says("running with", timeout=90)


@pytest.fixture(scope="module")
def daemons(database_url: str, marks: Path, pg_template_url: str | None) -> Iterator[list[Daemon]]:
    """The module's daemons: two on PostgreSQL (they claim side by side), one on SQLite.
    Started once, and ready before the first test's clock starts; a test may replace one."""
    running: list[Daemon] = [
        RangedDaemon(database_url, marks) for _ in range(2 if pg_template_url else 1)
    ]
    for d in running:
        d.wait_running()  # type: ignore[attr-defined]
    yield running
    for d in running:
        d.stop()


server = live_server(DEFINITIONS, scope="module", needs=("daemons",))


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


def same_runs(backfill: dict[str, Any], found: list[Execution], strict: bool = True) -> None:
    """The service's runs are the executions: same ids, attempts and keys; its successes are
    the executions that ended."""
    nodes = backfill["runs"]["nodes"]
    recorded = {(r["id"], r["attempt"], tuple(r["partitionKeys"])) for r in nodes}
    executed = {(e.run_id, e.attempt, e.keys) for e in found}
    assert recorded == executed if strict else executed <= recorded
    succeeded = {(r["id"], r["attempt"]) for r in nodes if r["status"] == "SUCCESS"}
    assert succeeded == {(e.run_id, e.attempt) for e in found if e.ended}
    for run in nodes:
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


def completed_once(found: list[Execution]) -> Counter[str]:
    """Each partition's completed executions; none completed twice."""
    done = Counter(k for e in found if e.ended for k in e.keys)
    assert [k for k, n in done.items() if n > 1] == [], "a partition completed twice"
    return done


@pytest.mark.parametrize(
    ("reprocess", "job", "month"), [("ALL", "threes", "05"), ("MISSING", "fours", "06")]
)
def test_overlapping_ranged_backfills_never_run_a_partition_twice_at_once(
    server: LiveServer, marks: Path, reprocess: str, job: str, month: str
) -> None:
    """Two backfills whose chunks straddle each other: a partition of one waits for the other's
    run of it (the flocks of ``executions`` catch any overlap); under ALL it then runs again,
    under MISSING it is skipped."""
    extra = {"runConfig": {"seconds": 0.3}, "reprocess": reprocess}
    first = launch(server, job, f"2024-{month}-01", f"2024-{month}-12", **extra)
    second = launch(server, job, f"2024-{month}-03", f"2024-{month}-14", **extra)
    done = [finish(server, b) for b in (first, second)]
    found = [e for e in executions(marks, job) if e.keys[0].startswith(f"2024-{month}")]
    per_partition = Counter(k for e in found for k in e.keys)
    inside = days(f"2024-{month}-01", 14)
    if reprocess == "ALL":
        both = days(f"2024-{month}-03", 10)
        assert per_partition == {k: 2 if k in both else 1 for k in inside}
        assert [d["counts"]["succeeded"] for d in done] == [12, 12]
    else:
        assert per_partition == dict.fromkeys(inside, 1)
        assert sum(d["counts"]["succeeded"] for d in done) == 14
        assert all(d["counts"]["skipped"] == 12 - d["counts"]["succeeded"] for d in done)
    for backfill in done:
        assert {r["status"] for r in backfill["runs"]["nodes"]} == {"SUCCESS"}
    same_runs(done[0], [e for e in found if e.run_id in ids_of(done[0])])


def ids_of(backfill: dict[str, Any]) -> set[str]:
    return {r["id"] for r in backfill["runs"]["nodes"]}


def test_a_killed_worker_fails_its_whole_range_once_and_the_range_reruns(
    server: LiveServer, marks: Path, daemons: list[Daemon]
) -> None:
    backfill_id = launch(server, "slow", "2024-07-01", "2024-07-04", runConfig={"seconds": 3})
    wait_for("a slow run to start", lambda: executions(marks, "slow"), timeout=30)
    for d in daemons:
        for pid in d.workers():
            os.kill(pid, signal.SIGKILL)
    backfill = finish(server, backfill_id)
    assert backfill["status"] == "COMPLETED_SUCCESS" and backfill["counts"]["succeeded"] == 4
    found = [e for e in executions(marks, "slow") if e.keys[0].startswith("2024-07")]
    assert completed_once(found) == dict.fromkeys(days("2024-07-01", 4), 1)
    lost = [r for r in backfill["runs"]["nodes"] if r["status"] == "FAILED"]
    assert lost and all(r["partitionCount"] == 2 for r in lost)
    # A worker killed between taking a run and starting its job leaves no execution mark.
    same_runs(backfill, found, strict=False)


def test_a_killed_daemons_ranged_runs_are_taken_over_after_its_lease(
    server: LiveServer, database_url: str, marks: Path, daemons: list[Daemon]
) -> None:
    backfill_id = launch(server, "slow", "2024-08-01", "2024-08-04", runConfig={"seconds": 1})

    def in_august() -> list[Execution]:
        return [e for e in executions(marks, "slow") if e.keys[0].startswith("2024-08")]

    wait_for("a slow run to start", in_august, timeout=30)
    daemons[0].kill()
    daemons[0] = RangedDaemon(database_url, marks)
    backfill = finish(server, backfill_id)
    assert backfill["status"] == "COMPLETED_SUCCESS" and backfill["counts"]["succeeded"] == 4
    found = in_august()
    assert completed_once(found) == dict.fromkeys(days("2024-08-01", 4), 1)
    if len(daemons) == 1:  # it held every run: they were lost with it and ran again
        lost = [r for r in backfill["runs"]["nodes"] if r["status"] == "FAILED"]
        assert lost and all(r["partitionCount"] == 2 for r in lost)
    # A run the dead daemon held but never started, or whose start it never wrote, has no
    # execution or no start: every execution is a run of the service, every success ended.
    same_runs(backfill, found, strict=False)


def test_a_ranged_asset_runs_whole_chunks_after_their_upstream_partitions(
    server: LiveServer, marks: Path
) -> None:
    """``raw_days`` runs a partition per run (two workers a daemon: several at a time),
    ``weekly`` chunks of at most 4 consecutive days once their upstream days ended, and
    ``after_weekly`` each day once its chunk ended.

    Chunks form from the days that are ready: 4, 4 when ``raw_days`` ends in order, but a day
    that ends late (a loaded machine) may find the days after it already run as a chunk, which
    splits the 8 days as 3, 4, 1. What always holds is the waiting rule: a chunk shorter than 4
    starts only once every neighbour of it in the backfill has its upstream day ended, so
    ``weekly`` never runs a short chunk while a day next to it waits for ``raw_days``."""
    data = gql(
        server,
        """mutation($input: LaunchBackfillInput!) {
          launchBackfill(input: $input) { backfill { id } userErrors { code message } }
        }""",
        {
            "input": {
                "target": {"assets": {"names": ["raw_days"], "downstream": True}},
                "partitions": {"range": {"start": "2024-09-01", "end": "2024-09-08"}},
            }
        },
    )["launchBackfill"]
    assert data["userErrors"] == []
    backfill = finish(server, data["backfill"]["id"])
    assert backfill["status"] == "COMPLETED_SUCCESS" and backfill["counts"]["succeeded"] == 24
    weekly = executions(marks, "weekly")
    assert sorted(k for e in weekly for k in e.keys) == list(days("2024-09-01", 8))
    times = marked_times(marks)
    raw_ended = {
        r.keys[0]: times[("end", "raw_days", r.run_id)]
        for r in executions(marks, "raw_days")
        if r.keys[0].startswith("2024-09")
    }
    for e in weekly:
        started = times[("start", "weekly", e.run_id)]
        assert 1 <= len(e.keys) <= 4 and e.keys == days(e.keys[0], len(e.keys))
        if len(e.keys) < 4:
            before = date.fromisoformat(e.keys[0]) - timedelta(days=1)
            after = date.fromisoformat(e.keys[-1]) + timedelta(days=1)
            for n in (before.isoformat(), after.isoformat()):
                if n in raw_ended:  # a neighbour inside the backfill
                    assert raw_ended[n] < started, (e.keys, n)
        for key in e.keys:
            (raw,) = [r for r in executions(marks, "raw_days") if r.keys == (key,)]
            (down,) = [d for d in executions(marks, "after_weekly") if d.keys == (key,)]
            assert times[("end", "raw_days", raw.run_id)] < started
            assert (
                times[("end", "weekly", e.run_id)] < times[("start", "after_weekly", down.run_id)]
            )
    found = [
        e
        for name in ("raw_days", "weekly", "after_weekly")
        for e in executions(marks, name)
        if e.keys[0].startswith("2024-09")
    ]
    same_runs(backfill, found)


def marked_times(marks: Path) -> dict[tuple[str, str, str], int]:
    """(start or end, asset or job, run id) -> its monotonic time."""
    found: dict[tuple[str, str, str], int] = {}
    for path in marks.glob("*.log"):
        for line in path.read_text().splitlines():
            what, name, run_id, _, _, _, at = line.split()
            found[(what, name, run_id)] = int(at)
    return found
