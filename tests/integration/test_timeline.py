"""``Backfill.timeline``: status, counts, status ranges and runs from one snapshot; they agree
at every step of a backfill that runs, retries and ends; bad arguments are typed errors."""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest

from backfiller.daemon.state import DaemonState
from backfiller.definitions.loading import Definitions
from backfiller.launchers import InlineLauncher
from backfiller.storage import Database
from tests.defs.jobs_daemon import definitions as daemon_definitions
from tests.integration.test_daemon_ticks import one_pass
from tests.support import FrozenClock, GraphQLRunner, launch

TIMELINE = """
query($id: ID!, $last: Int!) {
  backfill(id: $id) {
    timeline(lastRuns: $last) {
      readAt status totalRuns truncated
      counts { total pending queued running succeeded failed canceled skipped }
      partitionStatusRanges { status count }
      runs { ids jobs partitionKeys attempts statuses workers queuedAt startedAt endedAt }
    }
  }
}
"""
COUNT_OF_RANGE = {
    "PENDING": "pending", "QUEUED": "queued", "RUNNING": "running", "SUCCEEDED": "succeeded",
    "FAILED": "failed", "CANCELED": "canceled", "SKIPPED": "skipped",
}  # fmt: skip


@pytest.fixture
def definitions() -> Definitions:
    return daemon_definitions


def agrees(timeline: dict[str, Any]) -> None:
    """Counts, ranges and runs of one read tell the same story."""
    counts = timeline["counts"]
    by_range: Counter[str] = Counter()
    for r in timeline["partitionStatusRanges"]:
        by_range[COUNT_OF_RANGE[r["status"]]] += r["count"]
    assert {k: v for k, v in counts.items() if k != "total" and v} == dict(by_range)
    runs = timeline["runs"]
    latest: dict[str, str] = {}
    for key, status in zip(
        reversed(runs["partitionKeys"]), reversed(runs["statuses"]), strict=True
    ):
        latest[key] = status  # oldest first: the newest attempt of each partition wins
    states = Counter(latest.values())
    assert states["RUNNING"] == counts["running"]
    assert states["QUEUED"] == counts["queued"]
    assert len({len(column) for column in runs.values()}) == 1  # the columns line up


async def test_the_parts_of_a_timeline_agree_at_every_step(
    gql: GraphQLRunner, database: Database, definitions: Definitions, clock: FrozenClock
) -> None:
    backfill_id = await launch(gql, "flaky", "2024-01-01", "2024-01-12")
    # Runs held as started for a pass, then let go: every other read sees runs in flight.
    launcher = InlineLauncher(definitions, max_active=4, hold=True)
    state = DaemonState(plan_window=5)
    seen_running = False
    for step in range(80):
        timeline = (await gql(TIMELINE, {"id": backfill_id, "last": 1000}))["backfill"]["timeline"]
        agrees(timeline)
        seen_running |= timeline["counts"]["running"] > 0
        if timeline["status"] == "COMPLETED_SUCCESS":
            break
        launcher.hold = step % 2 == 0
        await one_pass(database, definitions, clock, launcher, state)
    assert timeline["status"] == "COMPLETED_SUCCESS" and seen_running
    runs = timeline["runs"]
    assert timeline["totalRuns"] == len(runs["ids"]) == 12 + 6  # even days failed once
    retried = [k for k, a in zip(runs["partitionKeys"], runs["attempts"], strict=True) if a == 2]
    assert sorted(retried) == [f"2024-01-{d:02d}" for d in range(2, 13, 2)]
    assert all(
        q <= s <= e
        for q, s, e in zip(runs["queuedAt"], runs["startedAt"], runs["endedAt"], strict=True)
    )

    few = (await gql(TIMELINE, {"id": backfill_id, "last": 5}))["backfill"]["timeline"]
    assert (len(few["runs"]["ids"]), few["totalRuns"], few["truncated"]) == (5, 18, True)
    assert few["runs"]["ids"] == runs["ids"][:5]  # the newest


@pytest.mark.parametrize("last", [-1, 20_001])
async def test_last_runs_out_of_bounds_is_a_typed_error(gql: GraphQLRunner, last: int) -> None:
    backfill_id = await launch(gql, "noop", "2024-01-01", "2024-01-02")
    result = await gql.raw(TIMELINE, {"id": backfill_id, "last": last})
    assert result.errors is not None
    assert result.errors[0].extensions == {"code": "INVALID_ARGUMENT"}
