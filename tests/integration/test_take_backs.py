"""Runs taken back before they executed (``NOT_STARTED`` while their backfill goes on): on
PostgreSQL they leave no record, on SQLite a CANCELED one (``storage/execution/takebacks.py``)."""

from __future__ import annotations

from typing import Any

import pytest
from sqlalchemy import select

from backfiller.daemon.ticks import DaemonState, launch_runs, plan_backfills, record_results
from backfiller.definitions.loading import Definitions
from backfiller.domain import Outcome, RunFinished, RunState
from backfiller.launchers import InlineLauncher
from backfiller.storage import Database
from backfiller.storage.records import PartitionStateRecord, RunRecord, SlotRecord
from tests.integration import ranged_defs
from tests.integration.test_daemon_ticks import drive
from tests.integration.test_ranged_runs import days, ranges_of, read, steer
from tests.support import FrozenClock, GraphQLRunner, launch


@pytest.fixture
def definitions() -> Definitions:
    ranged_defs.executions.clear()
    return ranged_defs.definitions


async def _rows(database: Database, record: Any) -> list[Any]:
    async with database.read() as session:
        return list((await session.execute(select(record))).scalars())


async def test_runs_taken_back_by_a_pause_leave_no_record_and_run_once_after_resume(
    gql: GraphQLRunner,
    database: Database,
    definitions: Definitions,
    clock: FrozenClock,
    is_postgres: bool,
) -> None:
    # The first day ran before: its partition's state is that run's.
    earlier = await launch(gql, "plain", "2024-01-01", "2024-01-01")
    state = DaemonState()
    await drive(database, definitions, clock, InlineLauncher(definitions), state)
    (before,) = [r for r in await _rows(database, RunRecord) if r.status is RunState.SUCCESS]

    backfill_id = await launch(gql, "plain", "2024-01-01", "2024-01-03", reprocess="ALL")
    whole_id = await launch(gql, "whole", "2024-01-01", "2024-01-04")
    held = InlineLauncher(definitions, hold=True)
    await plan_backfills(database, definitions, clock, state)
    await launch_runs(database, definitions, clock, held, state)
    tasks = list(held.active().values())
    assert len(tasks) == 4  # three plain runs, one ranged run of four partitions
    await steer(gql, "pause", backfill_id)
    await steer(gql, "pause", whole_id)
    refused = [
        RunFinished(t.run_id, clock(), Outcome.NOT_STARTED, attempt=t.attempt) for t in tasks
    ]
    report = await record_results(database, definitions, clock, held, state, events=refused)
    assert report.taken_back == 4

    for bid, total in ((backfill_id, 3), (whole_id, 4)):
        backfill = await read(gql, bid)
        assert backfill["counts"]["pending"] == total and backfill["counts"]["queued"] == 0
    runs = await _rows(database, RunRecord)
    states = {s.partition_key: s for s in await _rows(database, PartitionStateRecord)}
    slots = await _rows(database, SlotRecord)
    if is_postgres:
        assert [r.id for r in runs] == [before.id]  # the runs taken back are gone
        assert all(s.attempts == 0 for s in slots if s.backfill_id != before.backfill_id)
        assert (states["2024-01-01"].run_id, states["2024-01-01"].status) == (
            before.id,
            RunState.SUCCESS,
        )
        assert sorted(k for k, s in states.items() if s.status is not RunState.SUCCESS) == []
    else:
        assert sorted(r.status for r in runs if r.id != before.id) == [RunState.CANCELED] * 7

    for bid in (backfill_id, whole_id):
        await steer(gql, "resume", bid)
    ranged_defs.executions.clear()
    await drive(database, definitions, clock, InlineLauncher(definitions), state)
    assert sorted(k for n, keys, _, _ in ranged_defs.executions if n == "plain" for k in keys) == [
        *days(1, 3)
    ]
    assert ranges_of("whole") == [days(1, 4)]
    for bid, total in ((backfill_id, 3), (whole_id, 4)):
        assert (await read(gql, bid))["counts"]["succeeded"] == total
    if is_postgres:
        mine = [r for r in await _rows(database, RunRecord) if r.id != before.id]
        assert {(r.status, r.attempt) for r in mine} == {(RunState.SUCCESS, 1)}
    assert earlier
