"""Priority and fair share between teams, and ``updateBackfill``'s lower cap, judged by what
the jobs record of their own executions (``jobs_daemon.recorded``: a start and an end line per
execution).

Real server and daemon processes; the daemon's global cap is ``--max-runs``. Team A's huge
backfill is the issue's: 100,000 hourly partitions of 0.2 s (``recorded_hourly``), canceled at
the end of the test.
"""

from __future__ import annotations

import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from backfiller.ids import parse_backfill_id, run_id
from tests.acceptance.daemon_support import (
    DEFINITIONS,
    Daemon,
    Execution,
    executions,
    gql,
    launch,
    wait_for,
    wait_status,
)
from tests.acceptance.test_daemon_chaos import rows
from tests.support import LiveServer, launch_input, launched_id, live_server

pytestmark = [pytest.mark.acceptance, pytest.mark.slow]

server = live_server(DEFINITIONS)

RUN_SECONDS = 0.2
CREATE_TOKEN = """
mutation($name: String!, $team: String) {
  createApiToken(input: { name: $name, role: OPERATOR, team: $team }) {
    secret userErrors { code message }
  }
}
"""
LAUNCH = """
mutation($input: LaunchBackfillInput!) {
  launchBackfill(input: $input) {
    backfill { id team priority }
    userErrors { field message code }
  }
}
"""
UPDATE = """
mutation($input: UpdateBackfillInput!) {
  updateBackfill(input: $input) {
    backfill { id maxConcurrentRuns priority }
    userErrors { field message code }
  }
}
"""
CANCEL = "mutation($id: ID!) { cancelBackfill(input: { id: $id }) { userErrors { code } } }"


@pytest.fixture
def marks(tmp_path: Path) -> Path:
    folder = tmp_path / "marks"
    folder.mkdir()
    return folder


def daemon(database_url: str, marks: Path, workers: int, max_runs: int) -> Daemon:
    extra = ["--max-runs", str(max_runs), "--results-dir", str(marks.parent / "results")]
    return Daemon(
        database_url, workers=workers, extra=extra, env={"BACKFILLER_TEST_MARKS": str(marks)}
    )


def token_of(server: LiveServer, name: str, team: str) -> dict[str, str]:
    """The headers of a new operator token of ``team`` (made by the anonymous admin)."""
    answer = gql(server, CREATE_TOKEN, {"name": name, "team": team})["createApiToken"]
    assert answer["userErrors"] == []
    return {"Authorization": f"Bearer {answer['secret']}"}


def launch_as(
    server: LiveServer, headers: dict[str, str], start: str, end: str, **extra: Any
) -> str:
    return launch_job_as(server, headers, "recorded", start, end, extra)


def launch_job_as(
    server: LiveServer,
    headers: dict[str, str],
    job: str,
    start: str,
    end: str,
    extra: dict[str, Any],
) -> str:
    variables = {"input": launch_input(job, start, end, **extra)}
    response = server.graphql(LAUNCH, variables, headers=headers)
    assert response.status_code == 200, response.text
    return launched_id(response.json()["data"])


def count_of(server: LiveServer, backfill_id: str) -> int:
    """How many partitions the backfill selected."""
    answer = gql(
        server, "query($id: ID!) { backfill(id: $id) { counts { total } } }", {"id": backfill_id}
    )
    total: int = answer["backfill"]["counts"]["total"]
    return total


def of(found: list[Execution], backfill_id: str) -> list[Execution]:
    return [e for e in found if e.backfill_id == backfill_id]


def running_at(found: list[Execution], at: float) -> int:
    return sum(1 for e in found if e.started <= at and (e.ended is None or e.ended > at))


def span(found: list[Execution], since: float) -> float:
    """From ``since`` (the launch) to the last end."""
    return max(e.ended or 0.0 for e in found) - since


def cancel(server: LiveServer, backfill_id: str) -> None:
    gql(server, CANCEL, {"id": backfill_id})
    wait_status(server, backfill_id, {"CANCELED", "COMPLETED_SUCCESS"}, timeout=60)


def test_a_small_backfill_of_another_team_starts_at_once_beside_a_huge_one(
    server: LiveServer, database_url: str, marks: Path
) -> None:
    team_a = token_of(server, "team-a", "alpha")
    team_b = token_of(server, "team-b", "beta")
    seconds = {"runConfig": {"seconds": RUN_SECONDS}}
    running = daemon(database_url, marks, workers=4, max_runs=4)
    try:
        # A warm daemon first (its workers started), then B alone: its time with all the room.
        warm = launch_as(server, team_b, "2026-01-01", "2026-01-04", **seconds)
        wait_status(server, warm, {"COMPLETED_SUCCESS"}, timeout=120)
        alone_at = time.time()
        alone = launch_as(server, team_b, "2025-01-01", "2025-01-10", **seconds)
        wait_status(server, alone, {"COMPLETED_SUCCESS"}, timeout=120)
        # A's huge backfill takes the whole room...
        huge = launch_job_as(
            server, team_a, "recorded_hourly", "2000-01-01-00:00", "2011-05-29-15:00", seconds
        )
        assert count_of(server, huge) == 100_000
        wait_for("A fills the room", lambda: running_at(executions(marks), time.time()) >= 3)
        time.sleep(1.0)
        # ... then B launches 10 partitions.
        shared_at = time.time()
        shared = launch_as(server, team_b, "2024-01-01", "2024-01-10", **seconds)
        wait_status(server, shared, {"COMPLETED_SUCCESS"}, timeout=120)
        huge_done_meanwhile = len(of(executions(marks), huge))
        cancel(server, huge)
    finally:
        running.stop()
    found = executions(marks)
    b_alone, b_shared, a_runs = of(found, alone), of(found, shared), of(found, huge)
    assert len(b_alone) == 10 and len(b_shared) == 10
    first_start = min(e.started for e in b_shared) - shared_at
    alone_time, shared_time = span(b_alone, alone_at), span(b_shared, shared_at)
    print(
        f"\nB's first run {first_start * 1000:.0f} ms after its launch; B alone "
        f"{alone_time:.2f} s, beside A {shared_time:.2f} s ({shared_time / alone_time:.2f}x); "
        f"A ran {huge_done_meanwhile} partitions meanwhile"
    )
    # Within one tick: a run of A (0.2 s) ends, and its room goes to B before A.
    assert first_start < 2.0, f"B's first run started {first_start:.2f} s after its launch"
    # B shares the room evenly with A: of the runs that started while B's did, about half are
    # B's (two teams, one cap of 4: 2 and 2); first come, first served would give B none until
    # A's 100,000 were done. (Its time, printed above, is a load-dependent figure.)
    first_b, last_b = min(e.started for e in b_shared), max(e.started for e in b_shared)
    meanwhile = [e for e in found if first_b <= e.started <= last_b]
    assert len(b_shared) / len(meanwhile) >= 1 / 3, (len(b_shared), len(meanwhile))
    # The global cap held, and A kept going beside B (B took half the room, not all of it).
    for e in found:
        assert running_at(found, e.started) <= 4
    during = [e for e in a_runs if shared_at <= e.started <= max(x.ended or 0 for x in b_shared)]
    assert during, "A was starved while B ran"


def test_a_higher_priority_is_claimed_first_and_a_lower_one_still_progresses(
    server: LiveServer, database_url: str, marks: Path
) -> None:
    seconds = {"runConfig": {"seconds": RUN_SECONDS}}
    low = launch(server, "recorded", "2010-01-01", "2010-02-09", priority=0, **seconds)
    high = launch(server, "recorded", "2011-01-01", "2011-02-09", priority=10, **seconds)
    running = daemon(database_url, marks, workers=4, max_runs=4)
    try:
        wait_status(server, high, {"COMPLETED_SUCCESS"}, timeout=180)
        cancel(server, low)
    finally:
        running.stop()
    found = executions(marks)
    lows, highs = of(found, low), of(found, high)
    assert len(highs) == 40
    high_done = max(e.ended or 0.0 for e in highs)
    low_meanwhile = [e for e in lows if e.started < high_done]
    print(
        f"\nwhile the high priority's 40 partitions ran, the low priority ran {len(low_meanwhile)}"
    )
    # Both were launched before the daemon started: the high priority took most of the room
    # (3 of 4 runs: a level with nothing in flight gets the next run, so the low one keeps 1).
    assert len(low_meanwhile) >= 1, "the low priority starved"
    assert len(low_meanwhile) <= 40 // 2, "the high priority was not claimed first"
    first_high = sorted(e.started for e in highs)[:4]
    first_low = sorted(e.started for e in lows)[:4]
    assert sum(first_high) / 4 <= sum(first_low) / 4 + 0.5


def _timestamp(value: datetime | str) -> float:
    """A stored UTC time (PostgreSQL gives a datetime, SQLite its text) in seconds."""
    at = value if isinstance(value, datetime) else datetime.fromisoformat(value)
    return at.replace(tzinfo=at.tzinfo or UTC).timestamp()


def test_a_lower_cap_holds_from_the_next_tick(
    server: LiveServer, database_url: str, marks: Path
) -> None:
    backfill = launch(
        server, "recorded", "2012-01-01", "2012-03-31", maxConcurrentRuns=8,
        runConfig={"seconds": 0.5},
    )  # fmt: skip
    running = daemon(database_url, marks, workers=8, max_runs=16)
    try:
        wait_for(
            "8 runs at once", lambda: running_at(executions(marks), time.time()) >= 6, timeout=60
        )
        answer = gql(server, UPDATE, {"input": {"id": backfill, "maxConcurrentRuns": 2}})
        updated_at = time.time()
        assert answer["updateBackfill"]["userErrors"] == []
        assert answer["updateBackfill"]["backfill"]["maxConcurrentRuns"] == 2
        time.sleep(4.0)
        cancel(server, backfill)
    finally:
        running.stop()
    found = of(executions(marks), backfill)
    before = max(running_at(found, e.started) for e in found if e.started < updated_at)
    # Runs claimed before the update still start and finish (0.5 s each); a run claimed after
    # it starts only beside at most one other (the cap counts runs claimed, started or not).
    claimed_after = {
        run_id(pk)
        for pk, queued_at in rows(
            database_url,
            "SELECT id, queued_at FROM runs WHERE backfill_id = :b",
            b=parse_backfill_id(backfill),
        )
        if _timestamp(queued_at) > updated_at
    }
    later = [e for e in found if e.run_id in claimed_after]
    most_after = max((running_at(found, e.started) for e in later), default=0)
    print(f"\nat most {before} at once before the update, {most_after} beside a later claim")
    assert before >= 6
    assert later, "the backfill stopped instead of going on at 2"
    assert most_after <= 2
