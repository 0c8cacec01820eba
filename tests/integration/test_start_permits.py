"""A worker's start permits: one read of the start gate for the gated tasks it holds, and no
run started through a permit once a pause has answered (``domain.START_PERMIT_SECONDS``).

The worker's inbox (``launchers.worker``) runs here on a real pipe, with the real start gate on
the test's database; the runs are claimed by the daemon's own ticks. End to end, with workers
and a server, ``tests/acceptance/test_execution_guarantees.py`` checks from the jobs' own marks
that no job begins after ``pauseBackfill`` or ``cancelBackfill`` has answered.
"""

from __future__ import annotations

import time
from datetime import datetime
from multiprocessing import Pipe

import pytest

from backfiller.daemon.ticks import DaemonState, launch_runs, plan_backfills
from backfiller.definitions.loading import Definitions
from backfiller.domain import START_PERMIT_SECONDS
from backfiller.launchers import InlineLauncher
from backfiller.launchers.base import RunTask, StartCheck
from backfiller.launchers.messages import Gated
from backfiller.launchers.worker import _Inbox, _OwnGate
from backfiller.storage import Database
from tests.support import FrozenClock, GraphQLRunner, launch


class _Reads(_OwnGate):
    """The worker's own gate, which also keeps how many runs each read asked about."""

    def __init__(self) -> None:
        super().__init__()
        self.reads: list[int] = []

    def may_start(self, check: StartCheck, tasks: list[RunTask], at: datetime) -> set[int]:
        self.reads.append(len(tasks))
        return super().may_start(check, tasks, at)


@pytest.fixture
async def claimed(
    gql: GraphQLRunner, database: Database, definitions: Definitions, clock: FrozenClock
) -> tuple[str, str, list[RunTask]]:
    """A backfill of five days, claimed by a daemon's ticks: its id, the daemon's name and the
    five QUEUED runs' tasks."""
    backfill_id = await launch(gql, "daily_sales", "2024-03-01", "2024-03-05")
    held = InlineLauncher(definitions, hold=True)
    state = DaemonState()
    await plan_backfills(database, definitions, clock, state)
    await launch_runs(database, definitions, clock, held, state)
    tasks = sorted(held.active().values(), key=lambda t: t.run_id)
    assert len(tasks) == 5
    return backfill_id, state.owner, tasks


def _inbox(tasks: list[RunTask], check: StartCheck, permit_seconds: float) -> tuple[_Inbox, _Reads]:
    receiving, sending = Pipe(duplex=False)
    for task in tasks:
        sending.send(Gated(task, check))
    gate = _Reads()
    return _Inbox(receiving, gate, permit_seconds=permit_seconds), gate


async def _pause(gql: GraphQLRunner, backfill_id: str) -> float:
    """Pause through the API; the seconds it took to answer."""
    began = time.monotonic()
    data = await gql(
        "mutation($id: ID!) { pauseBackfill(input: {id: $id}) { userErrors { code } } }",
        {"id": backfill_id},
    )
    assert data["pauseBackfill"]["userErrors"] == []
    return time.monotonic() - began


async def test_one_read_of_the_gate_lets_every_held_task_start(
    claimed: tuple[str, str, list[RunTask]], database_url: str, clock: FrozenClock
) -> None:
    _, owner, tasks = claimed
    inbox, gate = _inbox(tasks, StartCheck(database_url, owner), permit_seconds=60)
    try:
        started = []
        for _ in tasks:
            message = inbox.next()
            assert isinstance(message, Gated)
            if inbox.may_start(message, clock()):
                started.append(message.task.run_id)
        assert started == [t.run_id for t in tasks]
        assert gate.reads == [5]  # one read, for the five tasks in the pipe
    finally:
        gate.dispose()


async def test_a_task_whose_permit_ran_out_reads_the_gate_again_and_a_pause_stops_it(
    claimed: tuple[str, str, list[RunTask]],
    gql: GraphQLRunner,
    database_url: str,
    clock: FrozenClock,
) -> None:
    backfill_id, owner, tasks = claimed
    inbox, gate = _inbox(tasks, StartCheck(database_url, owner), permit_seconds=0.0)
    try:
        first = inbox.next()
        assert isinstance(first, Gated) and inbox.may_start(first, clock())
        answered_after = await _pause(gql, backfill_id)
        refused = []
        for _ in tasks[1:]:
            message = inbox.next()
            assert isinstance(message, Gated)
            if not inbox.may_start(message, clock()):
                refused.append(message.task.run_id)
        assert refused == [t.run_id for t in tasks[1:]]
        assert gate.reads == [5, 4, 3, 2, 1]  # each permit had run out: a read each
    finally:
        gate.dispose()
    # A permit read before the pause's commit may still be in use until the pause answers.
    assert answered_after >= START_PERMIT_SECONDS
