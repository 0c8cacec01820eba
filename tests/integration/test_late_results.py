"""Late results and runs that never executed, written by the daemon's ticks against the real
database (the inline launcher stands for the Celery launcher's events): a run's real end that
arrives after it was reported lost wins while nothing has replaced it, and a run granted after
its worker gave up costs nothing (issue 31)."""

from __future__ import annotations

from typing import Any

import pytest
from sqlalchemy import select

from backfiller.daemon.ticks import DaemonState, launch_runs, plan_backfills, record_results
from backfiller.definitions.loading import Definitions
from backfiller.domain import Outcome, RunFinished
from backfiller.launchers import InlineLauncher
from backfiller.storage import Database
from backfiller.storage.records import PartitionStateRecord, SlotRecord
from tests.defs.jobs_daemon import definitions as daemon_definitions
from tests.integration.test_daemon_ticks import drive, read
from tests.support import FrozenClock, GraphQLRunner, launch


@pytest.fixture
def definitions() -> Definitions:
    return daemon_definitions


async def lost_run(
    gql: GraphQLRunner,
    database: Database,
    definitions: Definitions,
    clock: FrozenClock,
    state: DaemonState,
    launcher: InlineLauncher,
) -> tuple[str, int]:
    """A one-partition backfill whose first run started and was reported WORKER_LOST."""
    backfill_id = await launch(gql, "steady", "2024-01-01", "2024-01-01")
    await plan_backfills(database, definitions, clock, state)
    await launch_runs(database, definitions, clock, launcher, state)
    await record_results(database, definitions, clock, launcher, state)  # started
    (task,) = launcher.submitted
    launcher.lose([task.run_id])
    report = await record_results(database, definitions, clock, launcher, state)
    assert report.retried == 1
    return backfill_id, task.run_id


async def slot_counts(database: Database) -> tuple[Any, ...]:
    async with database.read() as session:
        row = (
            await session.execute(
                select(
                    SlotRecord.status,
                    SlotRecord.attempts,
                    SlotRecord.free_attempts,
                    SlotRecord.lost_attempts,
                )
            )
        ).one()
    return tuple(row)


def runs_of(backfill: dict[str, Any]) -> list[tuple[Any, ...]]:
    return sorted(
        (r["attempt"], r["status"], r["failureReason"]) for r in backfill["runs"]["nodes"]
    )


async def test_a_late_success_before_any_retry_is_claimed_is_the_partitions_outcome(
    gql: GraphQLRunner, database: Database, definitions: Definitions, clock: FrozenClock
) -> None:
    state = DaemonState()
    launcher = InlineLauncher(definitions, hold=True)
    backfill_id, run_id = await lost_run(gql, database, definitions, clock, state, launcher)
    late = RunFinished(run_id, clock(), Outcome.SUCCESS, worker="w:1", attempt=1)
    report = await record_results(database, definitions, clock, launcher, state, [late])
    assert report.succeeded == 1
    backfill = await read(gql, backfill_id)
    assert runs_of(backfill) == [(1, "SUCCESS", None)]
    assert backfill["counts"]["succeeded"] == 1 and backfill["counts"]["pending"] == 0
    # The lost-worker charge is given back: the slot shows one attempt, none lost.
    assert await slot_counts(database) == ("succeeded", 1, 0, 0)
    async with database.read() as session:
        status = (await session.execute(select(PartitionStateRecord.status))).scalar_one()
    assert status == "success"
    await drive(database, definitions, clock, InlineLauncher(definitions), state)
    backfill = await read(gql, backfill_id)
    assert backfill["status"] == "COMPLETED_SUCCESS"
    assert runs_of(backfill) == [(1, "SUCCESS", None)]  # it never ran again


async def test_a_late_result_withdraws_a_retry_claimed_but_not_started(
    gql: GraphQLRunner, database: Database, definitions: Definitions, clock: FrozenClock
) -> None:
    state = DaemonState()
    launcher = InlineLauncher(definitions, hold=True)
    backfill_id, run_id = await lost_run(gql, database, definitions, clock, state, launcher)
    retry = InlineLauncher(definitions, hold=True)
    await launch_runs(database, definitions, clock, retry, state)  # attempt 2, QUEUED
    (newer,) = retry.submitted
    assert newer.attempt == 2
    late = RunFinished(run_id, clock(), Outcome.ERROR, "boom", worker="w:1", attempt=1)
    await record_results(database, definitions, clock, launcher, state, [late])
    backfill = await read(gql, backfill_id)
    assert runs_of(backfill) == [(1, "FAILED", "ERROR"), (2, "CANCELED", None)]
    # The withdrawn attempt costs nothing; the error retries as the policy says.
    assert await slot_counts(database) == ("pending", 2, 1, 0)
    # The withdrawn run's start is refused (it is no longer QUEUED): it never runs.
    await record_results(database, definitions, clock, retry, state)
    backfill = await read(gql, backfill_id)
    assert runs_of(backfill) == [(1, "FAILED", "ERROR"), (2, "CANCELED", None)]


async def test_a_late_result_after_a_newer_attempt_started_is_refused(
    gql: GraphQLRunner, database: Database, definitions: Definitions, clock: FrozenClock
) -> None:
    state = DaemonState()
    launcher = InlineLauncher(definitions, hold=True)
    backfill_id, run_id = await lost_run(gql, database, definitions, clock, state, launcher)
    retry = InlineLauncher(definitions, hold=True)
    await launch_runs(database, definitions, clock, retry, state)
    await record_results(database, definitions, clock, retry, state)  # attempt 2 RUNNING
    late = RunFinished(run_id, clock(), Outcome.SUCCESS, worker="w:1", attempt=1)
    report = await record_results(database, definitions, clock, launcher, state, [late])
    assert report.succeeded == 0
    backfill = await read(gql, backfill_id)
    assert runs_of(backfill) == [(1, "FAILED", "WORKER_LOST"), (2, "RUNNING", None)]


async def test_a_start_granted_after_its_worker_gave_up_costs_nothing(
    gql: GraphQLRunner, database: Database, definitions: Definitions, clock: FrozenClock
) -> None:
    backfill_id = await launch(gql, "steady", "2024-01-01", "2024-01-01")
    state = DaemonState()
    launcher = InlineLauncher(definitions, hold=True)
    await plan_backfills(database, definitions, clock, state)
    await launch_runs(database, definitions, clock, launcher, state)
    await record_results(database, definitions, clock, launcher, state)  # the grant: RUNNING
    (task,) = launcher.submitted
    gave_up = RunFinished(
        task.run_id, clock(), Outcome.NOT_STARTED, "its worker gave up", attempt=task.attempt
    )
    report = await record_results(database, definitions, clock, launcher, state, [gave_up])
    assert (report.failed, report.retried, report.taken_back) == (0, 0, 1)
    assert await slot_counts(database) == ("pending", 1, 1, 0)
    data = await gql(
        "query($id: ID!) { backfill(id: $id) { runs(first: 5) { nodes { status startedAt } } } }",
        {"id": backfill_id},
    )
    assert data["backfill"]["runs"]["nodes"] == [{"status": "CANCELED", "startedAt": None}]
