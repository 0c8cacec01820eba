"""A team's limit on runs in flight, as the daemon's claims obey it (the ticks called directly,
the inline launcher holding its runs so that they stay in flight)."""

from __future__ import annotations

import pytest
from sqlalchemy import func, select, update

from backfiller.daemon.ticks import DaemonState, Limits, launch_runs, plan_backfills, record_results
from backfiller.definitions.loading import Definitions
from backfiller.launchers import InlineLauncher
from backfiller.storage import Database
from backfiller.storage.records import BackfillRecord, RunRecord
from backfiller.storage.teams import TeamRepository
from tests.defs.jobs_daemon import definitions as daemon_definitions
from tests.support import FrozenClock, GraphQLRunner, launch


@pytest.fixture
def definitions() -> Definitions:
    return daemon_definitions


async def in_flight(database: Database) -> dict[str | None, int]:
    async with database.read() as session:
        rows = await session.execute(
            select(BackfillRecord.team, func.count())
            .join(RunRecord, RunRecord.backfill_id == BackfillRecord.id)
            .where(RunRecord.status.in_(["queued", "running"]))
            .group_by(BackfillRecord.team)
        )
    return {team: int(n) for team, n in rows.all()}


async def act_for(database: Database, backfill_id: str, team: str) -> None:
    async with database.write() as session:
        await session.execute(
            update(BackfillRecord)
            .where(BackfillRecord.id == int(backfill_id[3:]))
            .values(team=team)
        )


async def drive(
    database: Database, defs: Definitions, clock: FrozenClock, launcher: InlineLauncher,
    state: DaemonState, passes: int = 6,
) -> None:  # fmt: skip
    for _ in range(passes):
        state.forget_backfills()
        await plan_backfills(database, defs, clock, state)
        await launch_runs(database, defs, clock, launcher, state)
        await record_results(database, defs, clock, launcher, state)


async def test_a_teams_own_limit_and_the_daemons_default_hold_across_its_backfills(
    gql: GraphQLRunner, database: Database, clock: FrozenClock, definitions: Definitions
) -> None:
    ids = [
        await launch(gql, "recorded", f"2024-0{month}-01", f"2024-0{month}-20")
        for month in (1, 2, 3, 4)
    ]
    for backfill_id, team in zip(ids, ("alpha", "alpha", "beta", "gamma"), strict=True):
        await act_for(database, backfill_id, team)
    async with database.write() as session:
        await TeamRepository(session).set_limit("alpha", 3, clock(), "test")
    launcher = InlineLauncher(definitions, max_active=100, hold=True)
    state = DaemonState(plan_window=40, limits=Limits(team_max_runs=5))
    state.team_limits_ttl = 0.0
    await drive(database, definitions, clock, launcher, state)
    held = await in_flight(database)
    # alpha: its own limit over its two backfills; beta and gamma: the daemon's default.
    assert held == {"alpha": 3, "beta": 5, "gamma": 5}
    # A limit raised by an admin is used at the next claim; removed, the default applies.
    async with database.write() as session:
        await TeamRepository(session).set_limit("alpha", None, clock(), "test")
    await drive(database, definitions, clock, launcher, state)
    assert (await in_flight(database))["alpha"] == 5
    launcher.release()
