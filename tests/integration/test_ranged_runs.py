"""Ranged runs (a job's backfill policy) through the daemon's ticks, on the real database."""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest
from sqlalchemy import select

from backfiller.config import Settings
from backfiller.daemon.ticks import (
    DaemonState,
    heartbeat_and_recover,
    launch_runs,
    plan_backfills,
    record_results,
)
from backfiller.definitions.loading import Definitions
from backfiller.domain import FailureReason, Outcome, RunFinished, RunState
from backfiller.examples import ranged
from backfiller.launchers import InlineLauncher
from backfiller.storage import Database
from backfiller.storage.execution import ExecutionRepository, StartGate
from backfiller.storage.records import PartitionStateRecord, RunRecord
from tests.integration import ranged_defs
from tests.integration.test_daemon_ticks import adds_up, drive
from tests.support import FrozenClock, GraphQLRunner, launch

READ = """
query($id: ID!) {
  backfill(id: $id) {
    status
    counts { total pending queued running succeeded failed canceled skipped }
    events { nodes { kind message } }
    runs(first: 100) { nodes { id partitionKey partitionKeys partitionCount attempt status
      logs { nodes { message } } } }
  }
}
"""


async def read(gql: GraphQLRunner, backfill_id: str) -> dict[str, Any]:
    data = await gql(READ, {"id": backfill_id})
    backfill: dict[str, Any] = data["backfill"]
    return backfill


@pytest.fixture
def definitions() -> Definitions:
    ranged_defs.executions.clear()
    return ranged_defs.definitions


async def steer(gql: GraphQLRunner, verb: str, backfill_id: str) -> None:
    data = await gql(
        f"mutation($id: ID!) {{ {verb}Backfill(input: {{id: $id}}) {{ userErrors {{ code }} }} }}",
        {"id": backfill_id},
    )
    assert data[f"{verb}Backfill"]["userErrors"] == []


def ranges_of(job: str) -> list[tuple[str, ...]]:
    return [keys for name, keys, _, _ in ranged_defs.executions if name == job]


def days(first: int, last: int) -> tuple[str, ...]:
    return tuple(f"2024-01-{d:02d}" for d in range(first, last + 1))


async def run_rows(database: Database) -> list[Any]:
    async with database.read() as session:
        result = await session.execute(select(RunRecord).order_by(RunRecord.id))
        return list(result.scalars())


async def test_single_run_runs_ten_days_once_with_ten_keys_and_counts_per_partition(
    gql: GraphQLRunner, database: Database, definitions: Definitions, clock: FrozenClock
) -> None:
    backfill_id = await launch(gql, "whole", "2024-01-01", "2024-01-10")
    await drive(database, definitions, clock, InlineLauncher(definitions), DaemonState())
    assert ranges_of("whole") == [days(1, 10)]
    (_, _, start, end) = ranged_defs.executions[0]
    assert start is not None and end is not None
    assert (start.isoformat(), end.isoformat()) == (
        "2024-01-01T00:00:00+00:00",
        "2024-01-11T00:00:00+00:00",
    )
    backfill = await read(gql, backfill_id)
    assert backfill["status"] == "COMPLETED_SUCCESS"
    assert backfill["counts"]["succeeded"] == 10 and adds_up(backfill["counts"])
    assert [r["partitionKey"] for r in backfill["runs"]["nodes"]] == ["2024-01-01"]
    assert backfill["runs"]["nodes"][0]["partitionKeys"] == list(days(1, 10))
    rows = await run_rows(database)
    assert len(rows) == 10 and {r.status for r in rows} == {RunState.SUCCESS}
    assert rows[0].partition_count == 10 and rows[0].lead_run_id is None
    assert {r.lead_run_id for r in rows[1:]} == {rows[0].id}
    async with database.read() as session:
        states = (
            await session.execute(
                select(PartitionStateRecord.status).where(PartitionStateRecord.job_name == "whole")
            )
        ).scalars()
        assert Counter(states) == {RunState.SUCCESS: 10}


async def test_multi_run_of_four_over_ten_days_runs_four_four_two(
    gql: GraphQLRunner, database: Database, definitions: Definitions, clock: FrozenClock
) -> None:
    backfill_id = await launch(gql, "fours", "2024-01-01", "2024-01-10")
    await drive(database, definitions, clock, InlineLauncher(definitions), DaemonState())
    assert ranges_of("fours") == [days(1, 4), days(5, 8), days(9, 10)]
    backfill = await read(gql, backfill_id)
    assert backfill["status"] == "COMPLETED_SUCCESS" and backfill["counts"]["succeeded"] == 10


async def test_a_small_planning_window_never_cuts_a_chunk(
    gql: GraphQLRunner, database: Database, definitions: Definitions, clock: FrozenClock
) -> None:
    await launch(gql, "fours", "2024-01-01", "2024-01-10")
    state = DaemonState(plan_window=6)
    await drive(database, definitions, clock, InlineLauncher(definitions), state)
    assert ranges_of("fours") == [days(1, 4), days(5, 8), days(9, 10)]


async def test_newest_first_chunks_from_the_end_and_gives_keys_oldest_first(
    gql: GraphQLRunner, database: Database, definitions: Definitions, clock: FrozenClock
) -> None:
    await launch(gql, "fours", "2024-01-01", "2024-01-10", order="NEWEST_FIRST")
    await drive(database, definitions, clock, InlineLauncher(definitions), DaemonState())
    assert ranges_of("fours") == [days(7, 10), days(3, 6), days(1, 2)]


async def test_a_failing_range_fails_every_partition_and_its_retry_reruns_them(
    gql: GraphQLRunner, database: Database, definitions: Definitions, clock: FrozenClock
) -> None:
    backfill_id = await launch(gql, "flaky_fours", "2024-01-01", "2024-01-06")
    await drive(database, definitions, clock, InlineLauncher(definitions), DaemonState())
    assert ranges_of("flaky_fours") == [days(1, 4), days(5, 6), days(1, 4), days(5, 6)]
    backfill = await read(gql, backfill_id)
    assert backfill["status"] == "COMPLETED_SUCCESS" and backfill["counts"]["succeeded"] == 6
    rows = await run_rows(database)
    assert Counter((r.attempt, r.status) for r in rows) == {
        (1, RunState.FAILED): 6,
        (2, RunState.SUCCESS): 6,
    }
    failures = [e["message"] for e in backfill["events"]["nodes"] if e["kind"] == "RUN_FAILED"]
    assert len(failures) == 2, "one event per failed run"
    assert sorted(m.split(" attempt")[0] for m in failures) == [
        "2024-01-01 and the 3 partitions after it",
        "2024-01-05 and the 1 partition after it",
    ]


async def test_missing_skips_succeeded_partitions_inside_a_chunk(
    gql: GraphQLRunner, database: Database, definitions: Definitions, clock: FrozenClock
) -> None:
    await launch(gql, "fours", "2024-01-03", "2024-01-03")
    launcher = InlineLauncher(definitions)
    await drive(database, definitions, clock, launcher, DaemonState())
    ranged_defs.executions.clear()
    second = await launch(gql, "fours", "2024-01-01", "2024-01-08", reprocess="MISSING")
    state = DaemonState()
    await plan_backfills(database, definitions, clock, state)
    # The succeeded partition is found at planning; one that succeeds after planning is
    # found at claim time: 2024-01-06 succeeds now, in another backfill, while this one waits.
    await steer(gql, "pause", second)
    await launch(gql, "fours", "2024-01-06", "2024-01-06")
    await drive(database, definitions, clock, launcher, state)
    await steer(gql, "resume", second)
    await drive(database, definitions, clock, launcher, state)
    assert ranges_of("fours") == [days(6, 6), days(1, 2), days(4, 5), days(7, 8)]
    backfill = await read(gql, second)
    assert backfill["counts"]["succeeded"] == 6 and backfill["counts"]["skipped"] == 2


async def test_a_range_waits_for_a_partition_running_elsewhere_and_never_overlaps_it(
    gql: GraphQLRunner, database: Database, definitions: Definitions, clock: FrozenClock
) -> None:
    await launch(gql, "fours", "2024-01-02", "2024-01-02")
    held = InlineLauncher(definitions, hold=True)
    state = DaemonState()
    await plan_backfills(database, definitions, clock, state)
    assert (await launch_runs(database, definitions, clock, held, state)).claimed == 1
    await launch(gql, "fours", "2024-01-01", "2024-01-04")
    await plan_backfills(database, definitions, clock, state)
    state.forget_backfills()
    await launch_runs(database, definitions, clock, held, state)
    assert [t.partition_keys for t in held.submitted] == [
        ("2024-01-02",),
        ("2024-01-01",),
        ("2024-01-03", "2024-01-04"),
    ]
    held.release()
    await record_results(database, definitions, clock, held, state)
    await drive(database, definitions, clock, held, state)
    rows = await run_rows(database)
    assert Counter(r.partition_key for r in rows if r.status is RunState.SUCCESS) == {
        "2024-01-01": 1,
        "2024-01-02": 1,
        "2024-01-03": 1,
        "2024-01-04": 1,
    }


async def test_limits_count_ranged_runs_not_partitions(
    gql: GraphQLRunner, database: Database, definitions: Definitions, clock: FrozenClock
) -> None:
    await launch(gql, "one_at_a_time", "2024-01-01", "2024-01-10")
    await launch(gql, "fours", "2024-01-01", "2024-01-20", maxConcurrentRuns=2)
    held = InlineLauncher(definitions, hold=True)
    state = DaemonState()
    await plan_backfills(database, definitions, clock, state)
    await launch_runs(database, definitions, clock, held, state)
    by_job = Counter(t.job_name for t in held.submitted)
    assert by_job == {"one_at_a_time": 1, "fours": 2}
    assert all(len(t.partition_keys) == 4 for t in held.submitted)


async def counts_of(gql: GraphQLRunner, backfill_id: str) -> dict[str, int]:
    counts: dict[str, int] = (await read(gql, backfill_id))["counts"]
    assert adds_up(counts)
    return counts


async def test_cancel_stops_a_ranged_run_and_cancels_each_of_its_partitions(
    gql: GraphQLRunner, database: Database, definitions: Definitions, clock: FrozenClock
) -> None:
    backfill_id = await launch(gql, "fours", "2024-01-01", "2024-01-10")
    held = InlineLauncher(definitions, max_active=1, hold=True)
    state = DaemonState()
    await plan_backfills(database, definitions, clock, state)
    await launch_runs(database, definitions, clock, held, state)
    await record_results(database, definitions, clock, held, state)
    assert (await counts_of(gql, backfill_id))["running"] == 4
    await steer(gql, "cancel", backfill_id)
    await drive(database, definitions, clock, held, state)
    backfill = await read(gql, backfill_id)
    assert backfill["status"] == "CANCELED"
    assert backfill["counts"]["canceled"] == 10 and adds_up(backfill["counts"])
    rows = await run_rows(database)
    assert len(rows) == 4 and {r.status for r in rows} == {RunState.CANCELED}
    assert ranged_defs.executions == []


async def test_a_lost_ranged_run_retries_every_partition_off_the_error_budget(
    gql: GraphQLRunner, database: Database, definitions: Definitions, clock: FrozenClock
) -> None:
    backfill_id = await launch(gql, "fours", "2024-01-01", "2024-01-04")
    launcher = InlineLauncher(definitions, hold=True)
    state = DaemonState()
    await plan_backfills(database, definitions, clock, state)
    await launch_runs(database, definitions, clock, launcher, state)
    await record_results(database, definitions, clock, launcher, state)
    launcher.lose(list(launcher.active()))
    launcher.release()
    await drive(database, definitions, clock, launcher, state)
    assert ranges_of("fours") == [days(1, 4)]
    assert (await counts_of(gql, backfill_id))["succeeded"] == 4
    rows = await run_rows(database)
    assert Counter((r.attempt, r.status, r.failure_reason) for r in rows) == {
        (1, RunState.FAILED, FailureReason.WORKER_LOST): 4,
        (2, RunState.SUCCESS, None): 4,
    }


async def test_a_dead_daemons_ranged_run_is_taken_over_whole_and_its_stale_end_refused(
    gql: GraphQLRunner, database: Database, definitions: Definitions, clock: FrozenClock
) -> None:
    backfill_id = await launch(gql, "fours", "2024-01-01", "2024-01-06")
    dead = DaemonState(owner="elsewhere:1:dead")
    held = InlineLauncher(definitions, hold=True)
    await plan_backfills(database, definitions, clock, dead)
    await launch_runs(database, definitions, clock, held, dead)
    await record_results(database, definitions, clock, held, dead)
    stale_tasks = list(held.active().values())
    assert [len(t.partition_keys) for t in stale_tasks] == [4, 2]
    alive = DaemonState()
    clock.advance(seconds=31)
    report = await heartbeat_and_recover(database, definitions, clock, alive)
    assert report.retried == 6
    assert (await counts_of(gql, backfill_id))["pending"] == 6
    # The dead daemon's late end of its first attempt is fenced off, for every partition.
    async with database.write() as session:
        late = await ExecutionRepository(session).record_results(
            "elsewhere:1:dead",
            clock(),
            ends=[RunFinished(t.run_id, clock(), Outcome.SUCCESS, attempt=1) for t in stale_tasks],
        )
    assert late.ignored == 2 and late.succeeded == 0
    await drive(database, definitions, clock, InlineLauncher(definitions), alive)
    assert (await counts_of(gql, backfill_id))["succeeded"] == 6
    assert ranges_of("fours") == [days(1, 4), days(5, 6)]


async def test_the_start_gate_refuses_a_paused_ranged_run_and_its_partitions_wait(
    gql: GraphQLRunner,
    database: Database,
    database_url: str,
    definitions: Definitions,
    clock: FrozenClock,
) -> None:
    backfill_id = await launch(gql, "whole", "2024-01-01", "2024-01-05")
    held = InlineLauncher(definitions, hold=True)
    state = DaemonState()
    await plan_backfills(database, definitions, clock, state)
    await launch_runs(database, definitions, clock, held, state)
    (task,) = held.active().values()
    gate = StartGate(database_url)
    try:
        asked = [(task.run_id, task.attempt, task.backfill_id)]
        assert gate.start(state.owner, asked, clock()) == {task.run_id}
        await steer(gql, "pause", backfill_id)
        assert gate.start(state.owner, asked, clock()) == set()
    finally:
        gate.dispose()
    refused = RunFinished(task.run_id, clock(), Outcome.NOT_STARTED, attempt=task.attempt)
    await record_results(database, definitions, clock, held, state, events=[refused])
    counts = await counts_of(gql, backfill_id)
    assert counts["pending"] == 5 and counts["queued"] == 0
    await steer(gql, "resume", backfill_id)
    held.tasks.clear()
    held.release()
    await drive(database, definitions, clock, held, state)
    assert ranges_of("whole") == [days(1, 5)]
    assert (await counts_of(gql, backfill_id))["succeeded"] == 5


async def test_preview_and_job_tell_the_policy_and_the_runs(
    gql: GraphQLRunner, database: Database, definitions: Definitions, clock: FrozenClock
) -> None:
    await launch(gql, "fours", "2024-01-05", "2024-01-05")
    await drive(database, definitions, clock, InlineLauncher(definitions), DaemonState())
    data = await gql(
        """query {
          job(name: "fours") { backfillPolicy { singleRun maxPartitionsPerRun } }
          whole: job(name: "whole") { backfillPolicy { singleRun maxPartitionsPerRun } }
          plain: job(name: "plain") { backfillPolicy { singleRun } }
        }"""
    )
    assert data["job"]["backfillPolicy"] == {"singleRun": False, "maxPartitionsPerRun": 4}
    assert data["whole"]["backfillPolicy"] == {"singleRun": True, "maxPartitionsPerRun": 1000}
    assert data["plain"]["backfillPolicy"] is None
    preview = await gql(
        """mutation($input: LaunchBackfillInput!) {
          previewBackfill(input: $input) { preview { total runs skipped rangedRuns } }
        }""",
        {
            "input": {
                "target": {"job": "fours"},
                "partitions": {"range": {"start": "2024-01-01", "end": "2024-01-10"}},
                "reprocess": "MISSING",
            }
        },
    )
    # 2024-01-05 succeeded: 1-4 and 6-10 are left, in runs of 4, 4 and 1.
    assert preview["previewBackfill"]["preview"] == {
        "total": 10,
        "runs": 9,
        "skipped": 1,
        "rangedRuns": 3,
    }


async def test_the_example_loads_january_in_five_runs(
    database: Database, settings: Settings, clock: FrozenClock
) -> None:
    launcher = InlineLauncher(ranged.definitions, hold=True)
    gql = GraphQLRunner(database, ranged.definitions, settings, clock)
    await launch(gql, "warehouse_load", "2024-01-01", "2024-01-31")
    state = DaemonState()
    await plan_backfills(database, ranged.definitions, clock, state)
    await launch_runs(database, ranged.definitions, clock, launcher, state)
    assert [len(t.partition_keys) for t in launcher.submitted] == [7, 7, 7, 7, 3]
