"""The daemon's ticks, called directly against the real database, with the inline launcher."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import func, select, update

from backfiller.daemon.lease import keep_lease
from backfiller.daemon.ticks import (
    DaemonState,
    Limits,
    TickReport,
    complete_backfills,
    heartbeat_and_recover,
    launch_runs,
    plan_backfills,
    record_results,
    requeue_runs_of,
    steer_backfills,
)
from backfiller.definitions.loading import Definitions
from backfiller.domain import BackfillState, Outcome, RunFinished, RunState, SlotState
from backfiller.launchers import InlineLauncher, LocalLauncher
from backfiller.launchers.worker import Journal
from backfiller.storage import Database
from backfiller.storage.records import (
    BackfillEventRecord,
    BackfillRecord,
    DaemonLeaseRecord,
    PartitionStateRecord,
    RunLogRecord,
    RunRecord,
    SlotRecord,
)
from tests.defs.jobs_daemon import definitions as daemon_definitions
from tests.support import FrozenClock, GraphQLRunner, launch

READ = """
query($id: ID!) {
  backfill(id: $id) {
    status error
    counts { total pending queued running succeeded failed canceled skipped }
    partitionStatusRanges { status startKey endKey startIndex count }
    events { nodes { kind message } }
    runs(first: 100) { nodes { id partitionKey attempt status failureReason errorMessage
      logs { nodes { level message } } } }
  }
}
"""


@pytest.fixture
def definitions() -> Definitions:
    return daemon_definitions


async def read(gql: GraphQLRunner, backfill_id: str) -> dict[str, Any]:
    data = await gql(READ, {"id": backfill_id})
    backfill: dict[str, Any] = data["backfill"]
    return backfill


def adds_up(counts: dict[str, int]) -> bool:
    return counts["total"] == sum(v for k, v in counts.items() if k != "total")


async def one_pass(
    database: Database,
    definitions: Definitions,
    clock: FrozenClock,
    launcher: InlineLauncher,
    state: DaemonState,
) -> TickReport:
    report = await plan_backfills(database, definitions, clock, state)
    report += await launch_runs(database, definitions, clock, launcher, state)
    report += await record_results(database, definitions, clock, launcher, state)
    report += await steer_backfills(database, clock, launcher, state)
    report += await complete_backfills(database, clock)
    return report


async def drive(
    database: Database,
    definitions: Definitions,
    clock: FrozenClock,
    launcher: InlineLauncher,
    state: DaemonState,
    passes: int = 200,
) -> TickReport:
    total = TickReport()
    # A daemon reuses its list of running backfills for backfills_ttl (0.25 s), so a backfill
    # resumed just before this drive could look idle for a pass, and drive stops at the first
    # idle pass. A real daemon idles longer than that between passes: start from a fresh list.
    state.forget_backfills()
    for _ in range(passes):
        report = await one_pass(database, definitions, clock, launcher, state)
        total += report
        if not report.busy:
            break
    return total


async def test_a_backfill_runs_to_completed_success_with_exact_counts(
    gql: GraphQLRunner, database: Database, definitions: Definitions, clock: FrozenClock
) -> None:
    backfill_id = await launch(gql, "noop", "2024-01-01", "2024-03-31")
    launcher = InlineLauncher(definitions, max_active=16)
    state = DaemonState(plan_window=40)
    report = await drive(database, definitions, clock, launcher, state)
    assert report.succeeded == 91
    assert report.started_backfills == 1 and report.completed_backfills == 1
    backfill = await read(gql, backfill_id)
    assert backfill["status"] == "COMPLETED_SUCCESS"
    assert backfill["counts"]["succeeded"] == 91 and adds_up(backfill["counts"])
    assert backfill["partitionStatusRanges"] == [
        {
            "status": "SUCCEEDED",
            "startKey": "2024-01-01",
            "endKey": "2024-03-31",
            "startIndex": 0,
            "count": 91,
        }
    ]
    kinds = [e["kind"] for e in backfill["events"]["nodes"]]
    assert kinds == ["LAUNCHED", "STARTED", "COMPLETED"]
    async with database.read() as session:
        runs = (await session.execute(select(func.count()).select_from(RunRecord))).scalar_one()
        states = (
            await session.execute(
                select(PartitionStateRecord.status).where(PartitionStateRecord.job_name == "noop")
            )
        ).scalars()
        assert runs == 91
        assert set(states) == {RunState.SUCCESS}


async def test_planning_is_lazy_and_bounded(
    gql: GraphQLRunner, database: Database, definitions: Definitions, clock: FrozenClock
) -> None:
    backfill_id = await launch(gql, "noop", "2000-01-01", "2029-12-31")
    state = DaemonState(plan_window=100)
    report = await plan_backfills(database, definitions, clock, state)
    assert report.planned == 100
    again = await plan_backfills(database, definitions, clock, state)
    assert again.planned == 0, "a full window is not planned again before it is launched"
    backfill = await read(gql, backfill_id)
    assert backfill["status"] == "RUNNING"
    assert backfill["counts"]["pending"] == backfill["counts"]["total"] == 10958


async def test_order_newest_first_and_the_backfill_limit(
    gql: GraphQLRunner, database: Database, definitions: Definitions, clock: FrozenClock
) -> None:
    await launch(gql, "noop", "2024-01-01", "2024-01-10", order="NEWEST_FIRST", maxConcurrentRuns=3)
    launcher = InlineLauncher(definitions, max_active=16, hold=True)
    state = DaemonState()
    await plan_backfills(database, definitions, clock, state)
    report = await launch_runs(database, definitions, clock, launcher, state)
    assert report.claimed == 3
    assert [t.partition_key for t in launcher.submitted] == [
        "2024-01-10",
        "2024-01-09",
        "2024-01-08",
    ]
    again = await launch_runs(database, definitions, clock, launcher, state)
    assert again.claimed == 0


async def test_the_job_limit_holds_across_backfills(
    gql: GraphQLRunner, database: Database, definitions: Definitions, clock: FrozenClock
) -> None:
    await launch(gql, "limited", "2024-01-01", "2024-01-10")
    await launch(gql, "limited", "2024-02-01", "2024-02-10")
    launcher = InlineLauncher(definitions, max_active=16, hold=True)
    state = DaemonState()
    await plan_backfills(database, definitions, clock, state)
    report = await launch_runs(database, definitions, clock, launcher, state)
    assert report.claimed == 2


async def test_the_daemon_limit(
    gql: GraphQLRunner, database: Database, definitions: Definitions, clock: FrozenClock
) -> None:
    await launch(gql, "noop", "2024-01-01", "2024-01-10")
    launcher = InlineLauncher(definitions, max_active=16, hold=True)
    state = DaemonState(limits=Limits(max_runs=4))
    await plan_backfills(database, definitions, clock, state)
    assert (await launch_runs(database, definitions, clock, launcher, state)).claimed == 4


async def test_never_two_active_runs_of_one_partition_across_backfills(
    gql: GraphQLRunner, database: Database, definitions: Definitions, clock: FrozenClock
) -> None:
    await launch(gql, "noop", "2024-01-01", "2024-01-05", reprocess="ALL")
    await launch(gql, "noop", "2024-01-01", "2024-01-05", reprocess="ALL")
    launcher = InlineLauncher(definitions, max_active=16, hold=True)
    state = DaemonState()
    await plan_backfills(database, definitions, clock, state)
    report = await launch_runs(database, definitions, clock, launcher, state)
    keys = [t.partition_key for t in launcher.submitted]
    assert report.claimed == 5 and len(set(keys)) == 5
    launcher.release()
    total = await drive(database, definitions, clock, launcher, state)
    assert total.succeeded == 10


async def test_reprocess_missing_skips_what_succeeded_with_the_reason(
    gql: GraphQLRunner, database: Database, definitions: Definitions, clock: FrozenClock
) -> None:
    launcher = InlineLauncher(definitions)
    state = DaemonState()
    await launch(gql, "noop", "2024-01-01", "2024-01-05")
    await drive(database, definitions, clock, launcher, state)
    second = await launch(gql, "noop", "2024-01-01", "2024-01-10")
    await drive(database, definitions, clock, launcher, state)
    backfill = await read(gql, second)
    assert backfill["status"] == "COMPLETED_SUCCESS"
    assert backfill["counts"]["skipped"] == 5 and backfill["counts"]["succeeded"] == 5
    data = await gql(
        """query($id: ID!) { backfill(id: $id) { partitions(first: 3) {
             nodes { key status skipReason } } } }""",
        {"id": second},
    )
    assert data["backfill"]["partitions"]["nodes"][0] == {
        "key": "2024-01-01",
        "status": "SKIPPED",
        "skipReason": "ALREADY_SUCCEEDED",
    }
    third = await launch(gql, "noop", "2024-01-01", "2024-01-10", reprocess="ALL")
    await drive(database, definitions, clock, launcher, state)
    assert (await read(gql, third))["counts"]["succeeded"] == 10


async def test_retries_follow_the_policy_and_failures_end_completed_failed(
    gql: GraphQLRunner, database: Database, definitions: Definitions, clock: FrozenClock
) -> None:
    flaky = await launch(gql, "flaky", "2024-01-01", "2024-01-04")
    broken = await launch(gql, "broken", "2024-01-01", "2024-01-02")
    launcher = InlineLauncher(definitions)
    state = DaemonState()
    await drive(database, definitions, clock, launcher, state)
    flaky_read = await read(gql, flaky)
    assert flaky_read["status"] == "COMPLETED_SUCCESS"
    assert flaky_read["counts"]["succeeded"] == 4
    attempts = sorted(
        (r["partitionKey"], r["attempt"], r["status"]) for r in flaky_read["runs"]["nodes"]
    )
    assert attempts == [
        ("2024-01-01", 1, "SUCCESS"),
        ("2024-01-02", 1, "FAILED"),
        ("2024-01-02", 2, "SUCCESS"),
        ("2024-01-03", 1, "SUCCESS"),
        ("2024-01-04", 1, "FAILED"),
        ("2024-01-04", 2, "SUCCESS"),
    ]
    broken_read = await read(gql, broken)
    assert broken_read["status"] == "COMPLETED_FAILED"
    assert broken_read["counts"]["failed"] == 2 and adds_up(broken_read["counts"])
    runs = broken_read["runs"]["nodes"]
    assert len(runs) == 4
    assert all(r["failureReason"] == "ERROR" for r in runs)
    assert runs[0]["errorMessage"] == "ValueError: cannot process 2024-01-02"
    messages = [line["message"] for line in runs[0]["logs"]["nodes"]]
    assert messages[0] == "about to fail"
    assert "run failed: ValueError" in messages[-1]
    kinds = [e["kind"] for e in broken_read["events"]["nodes"]]
    assert kinds.count("RUN_FAILED") == 4 and kinds[-1] == "COMPLETED"
    async with database.read() as session:
        trace = (
            (
                await session.execute(
                    select(RunRecord.error_traceback).where(RunRecord.job_name == "broken")
                )
            )
            .scalars()
            .first()
        )
    assert trace is not None and "Traceback" in trace


async def test_retry_delay_waits_for_the_clock(
    gql: GraphQLRunner, database: Database, definitions: Definitions, clock: FrozenClock
) -> None:
    from backfiller.definitions.jobs import RetryPolicy, job

    delayed = job(
        partitions=daemon_definitions.get_job("flaky").partitions,  # type: ignore[union-attr]
        name="flaky",
        retry=RetryPolicy(max_retries=1, delay_seconds=60),
    )(daemon_definitions.get_job("flaky").fn)  # type: ignore[union-attr]
    defs = Definitions(jobs=[delayed])
    backfill_id = await launch(gql, "flaky", "2024-01-02", "2024-01-02")
    launcher = InlineLauncher(defs)
    state = DaemonState()
    await drive(database, defs, clock, launcher, state)
    assert (await read(gql, backfill_id))["counts"]["pending"] == 1
    clock.advance(seconds=61)
    await drive(database, defs, clock, launcher, state)
    assert (await read(gql, backfill_id))["status"] == "COMPLETED_SUCCESS"


async def test_pause_stops_claims_and_resume_continues_without_duplicates(
    gql: GraphQLRunner, database: Database, definitions: Definitions, clock: FrozenClock
) -> None:
    backfill_id = await launch(gql, "noop", "2024-01-01", "2024-01-20")
    launcher = InlineLauncher(definitions, max_active=5, hold=True)
    state = DaemonState()
    await one_pass(database, definitions, clock, launcher, state)
    await gql(
        "mutation($id: ID!) { pauseBackfill(input: {id: $id}) { userErrors { code } } }",
        {"id": backfill_id},
    )
    launcher.release()
    await drive(database, definitions, clock, launcher, state)
    paused = await read(gql, backfill_id)
    assert paused["status"] == "PAUSED"
    assert paused["counts"]["succeeded"] == 5 and paused["counts"]["pending"] == 15
    await gql(
        "mutation($id: ID!) { resumeBackfill(input: {id: $id}) { userErrors { code } } }",
        {"id": backfill_id},
    )
    await drive(database, definitions, clock, launcher, state)
    done = await read(gql, backfill_id)
    assert done["status"] == "COMPLETED_SUCCESS" and done["counts"]["succeeded"] == 20
    async with database.read() as session:
        runs = (await session.execute(select(func.count()).select_from(RunRecord))).scalar_one()
    assert runs == 20


async def test_cancel_stops_running_runs_and_ends_canceled(
    gql: GraphQLRunner, database: Database, definitions: Definitions, clock: FrozenClock
) -> None:
    backfill_id = await launch(gql, "noop", "2024-01-01", "2024-12-31")
    launcher = InlineLauncher(definitions, max_active=4, hold=True)
    state = DaemonState(plan_window=50)
    await one_pass(database, definitions, clock, launcher, state)
    assert len(launcher.active()) == 4
    data = await gql(
        "mutation($id: ID!) { cancelBackfill(input: {id: $id}) { backfill { status } } }",
        {"id": backfill_id},
    )
    assert data["cancelBackfill"]["backfill"]["status"] == "CANCELING"
    report = await drive(database, definitions, clock, launcher, state)
    assert report.canceled_backfills == 1
    backfill = await read(gql, backfill_id)
    assert backfill["status"] == "CANCELED"
    counts = backfill["counts"]
    assert counts["canceled"] == 366 and adds_up(counts)
    assert {r["status"] for r in backfill["runs"]["nodes"]} == {"CANCELED"}
    assert [r["status"] for r in backfill["partitionStatusRanges"]] == ["CANCELED"]
    kinds = [e["kind"] for e in backfill["events"]["nodes"]]
    assert kinds == ["LAUNCHED", "STARTED", "CANCEL_REQUESTED", "CANCELED"]


async def test_a_lost_worker_fails_the_attempt_and_the_policy_retries_it(
    gql: GraphQLRunner, database: Database, definitions: Definitions, clock: FrozenClock
) -> None:
    backfill_id = await launch(gql, "steady", "2024-01-01", "2024-01-01")
    launcher = InlineLauncher(definitions, hold=True)
    state = DaemonState()
    await one_pass(database, definitions, clock, launcher, state)
    launcher.lose(list(launcher.active()))
    launcher.release()
    await drive(database, definitions, clock, launcher, state)
    backfill = await read(gql, backfill_id)
    assert backfill["status"] == "COMPLETED_SUCCESS"
    runs = sorted(
        (r["attempt"], r["status"], r["failureReason"]) for r in backfill["runs"]["nodes"]
    )
    assert runs == [(1, "FAILED", "WORKER_LOST"), (2, "SUCCESS", None)]


async def test_runs_of_a_dead_daemon_are_requeued_once_its_lease_expired_off_the_retry_budget(
    gql: GraphQLRunner, database: Database, definitions: Definitions, clock: FrozenClock
) -> None:
    backfill_id = await launch(gql, "noop", "2024-01-01", "2024-01-03")
    dead = DaemonState(owner="elsewhere:1:dead")
    launcher = InlineLauncher(definitions, hold=True)
    await plan_backfills(database, definitions, clock, dead)
    await launch_runs(database, definitions, clock, launcher, dead)
    await record_results(database, definitions, clock, launcher, dead)
    alive = DaemonState()
    # Its lease has not expired: its workers may still be running its runs, so they stay.
    clock.advance(seconds=29)
    early = await heartbeat_and_recover(database, definitions, clock, alive)
    assert early.lost == 0
    clock.advance(seconds=2)
    report = await heartbeat_and_recover(database, definitions, clock, alive)
    assert report.lost == 3 and report.retried == 3
    fresh = InlineLauncher(definitions)
    await drive(database, definitions, clock, fresh, alive)
    backfill = await read(gql, backfill_id)
    assert backfill["status"] == "COMPLETED_SUCCESS"
    statuses = sorted(
        (r["partitionKey"], r["attempt"], r["failureReason"]) for r in backfill["runs"]["nodes"]
    )
    assert statuses == [
        ("2024-01-01", 1, "WORKER_LOST"),
        ("2024-01-01", 2, None),
        ("2024-01-02", 1, "WORKER_LOST"),
        ("2024-01-02", 2, None),
        ("2024-01-03", 1, "WORKER_LOST"),
        ("2024-01-03", 2, None),
    ]
    # A late result of the dead daemon's run changes nothing.
    stale = await requeue_runs_of(database, definitions, clock, "elsewhere:1:dead", "again")
    assert stale.lost == 0


async def test_a_dead_daemons_kept_results_count_at_the_runs_attempt_and_its_lease_goes_last(
    gql: GraphQLRunner,
    database: Database,
    definitions: Definitions,
    clock: FrozenClock,
    tmp_path: Path,
) -> None:
    backfill_id = await launch(gql, "noop", "2024-01-01", "2024-01-03")
    dead = DaemonState(owner="elsewhere:1:dead")
    held = InlineLauncher(definitions, hold=True)
    await keep_lease(database, clock, dead, held)
    await plan_backfills(database, definitions, clock, dead)
    await launch_runs(database, definitions, clock, held, dead)
    await record_results(database, definitions, clock, held, dead)
    first, second, third = sorted(held.submitted, key=lambda t: t.partition_key)
    # Its workers kept two ends: one of the run's attempt, one of another attempt (fenced off).
    journal = Journal(tmp_path, "worker")
    journal.ended(RunFinished(first.run_id, clock(), Outcome.SUCCESS, attempt=1))
    journal.ended(RunFinished(second.run_id, clock(), Outcome.SUCCESS, attempt=2))
    journal.close()
    kept = LocalLauncher("tests.defs.jobs_daemon:definitions", 1, results_dir=str(tmp_path))
    try:
        clock.advance(seconds=31)
        report = await heartbeat_and_recover(database, definitions, clock, DaemonState(), kept)
    finally:
        kept.close()
    assert (report.recovered, report.lost) == (1, 2)
    async with database.read() as session:
        owners = (await session.execute(select(DaemonLeaseRecord.owner))).scalars().all()
    assert dead.owner not in owners  # dropped once none of its runs was left
    assert not [p for p in os.listdir(tmp_path) if p.startswith("worker-")], "deleted once written"
    await drive(database, definitions, clock, InlineLauncher(definitions), DaemonState())
    backfill = await read(gql, backfill_id)
    runs = sorted((r["partitionKey"], r["attempt"], r["status"]) for r in backfill["runs"]["nodes"])
    assert runs == [
        ("2024-01-01", 1, "SUCCESS"),
        ("2024-01-02", 1, "FAILED"),
        ("2024-01-02", 2, "SUCCESS"),
        ("2024-01-03", 1, "FAILED"),
        ("2024-01-03", 2, "SUCCESS"),
    ]
    assert third.attempt == 1


async def test_a_backfill_whose_job_vanished_fails_with_the_reason(
    gql: GraphQLRunner, database: Database, definitions: Definitions, clock: FrozenClock
) -> None:
    backfill_id = await launch(gql, "noop", "2024-01-01", "2024-01-03")
    fewer = Definitions(jobs=[j for j in definitions.jobs if j.name != "noop"])
    report = await plan_backfills(database, fewer, clock, DaemonState())
    assert report.failed_backfills == 1
    backfill = await read(gql, backfill_id)
    assert backfill["status"] == "FAILED"
    assert "no longer in the definitions" in backfill["error"]
    assert adds_up(backfill["counts"])


async def test_planning_never_touches_a_canceled_backfill(
    gql: GraphQLRunner, database: Database, definitions: Definitions, clock: FrozenClock
) -> None:
    backfill_id = await launch(gql, "noop", "2024-01-01", "2024-01-03")
    await gql(
        "mutation($id: ID!) { cancelBackfill(input: {id: $id}) { userErrors { code } } }",
        {"id": backfill_id},
    )
    state = DaemonState()
    report = await drive(database, definitions, clock, InlineLauncher(definitions), state)
    assert report.planned == 0
    async with database.read() as session:
        slots = (await session.execute(select(func.count()).select_from(SlotRecord))).scalar_one()
    assert slots == 0
    assert (await read(gql, backfill_id))["counts"]["canceled"] == 3


async def test_the_run_context_carries_windows_tags_and_config(
    gql: GraphQLRunner, database: Database, definitions: Definitions, clock: FrozenClock
) -> None:
    await launch(
        gql, "daily_windows", "2024-03-01", "2024-03-01", tags=[{"key": "team", "value": "x"}]
    )
    launcher = InlineLauncher(definitions)
    await drive(database, definitions, clock, launcher, DaemonState())
    task = launcher.submitted[0]
    assert (
        task.partition_start is not None
        and task.partition_start.isoformat() == "2024-03-01T00:00:00+00:00"
    )
    assert (
        task.partition_end is not None
        and task.partition_end.isoformat() == "2024-03-02T00:00:00+00:00"
    )
    assert task.tags == {"team": "x"}
    async with database.read() as session:
        lines = (await session.execute(select(RunLogRecord.message))).scalars().all()
    assert lines == ["window 2024-03-01 00:00:00+00:00 2024-03-02 00:00:00+00:00"]


async def test_counts_add_up_at_every_step(
    gql: GraphQLRunner, database: Database, definitions: Definitions, clock: FrozenClock
) -> None:
    await launch(gql, "flaky", "2024-01-01", "2024-02-29", maxConcurrentRuns=7)
    launcher = InlineLauncher(definitions, max_active=5)
    state = DaemonState(plan_window=10)
    for _ in range(100):
        report = await one_pass(database, definitions, clock, launcher, state)
        async with database.read() as session:
            record = (await session.execute(select(BackfillRecord))).scalar_one()
            by_status = dict(
                (
                    await session.execute(
                        select(SlotRecord.status, func.count()).group_by(SlotRecord.status)
                    )
                ).all()
            )
        unplanned = record.total - record.planned
        assert record.pending == by_status.get(SlotState.PENDING, 0) + unplanned
        for state_name in ("queued", "running", "succeeded", "failed", "canceled", "skipped"):
            assert getattr(record, state_name) == by_status.get(SlotState(state_name), 0)
        if not report.busy:
            break
    assert record.status is BackfillState.COMPLETED_SUCCESS
    async with database.read() as session:
        events = (
            await session.execute(select(func.count()).select_from(BackfillEventRecord))
        ).scalar_one()
    assert events > 3


async def test_a_stale_claim_on_a_paused_backfill_claims_nothing(
    gql: GraphQLRunner, database: Database, definitions: Definitions, clock: FrozenClock
) -> None:
    backfill_id = await launch(gql, "noop", "2024-01-01", "2024-01-03")
    state = DaemonState()
    await plan_backfills(database, definitions, clock, state)
    async with database.write() as session:
        await session.execute(update(BackfillRecord).values(status=BackfillState.PAUSED))
    launcher = InlineLauncher(definitions)
    assert (await launch_runs(database, definitions, clock, launcher, state)).claimed == 0
    assert (await read(gql, backfill_id))["counts"]["pending"] == 3
