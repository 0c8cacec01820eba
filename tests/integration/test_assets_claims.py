"""The claim path of asset backfills, tick by tick against the real database (SQLite, or
PostgreSQL with ``BACKFILLER_TEST_DATABASE_URL``), with the inline launcher: a downstream slot
is not claimed while an upstream slot it needs is unfinished, and an upstream failure after
its retries skips exactly its downstream slots, with exact counts."""

from __future__ import annotations

import pytest
from sqlalchemy import select

from backfiller.daemon import assets as daemon_assets
from backfiller.daemon.ticks import DaemonState, launch_runs, plan_backfills
from backfiller.definitions.loading import Definitions
from backfiller.launchers import InlineLauncher
from backfiller.storage import Database
from backfiller.storage.records import RunRecord, SlotRecord
from tests.defs.assets import definitions as asset_definitions
from tests.integration.test_daemon_ticks import drive
from tests.support import FrozenClock, GraphQLRunner, launch

COUNTS = """
query($id: ID!) {
  backfill(id: $id) { status counts { total pending succeeded failed skipped } }
}
"""


@pytest.fixture
def definitions() -> Definitions:
    return asset_definitions


async def launch_diamond(gql: GraphQLRunner, start: str, end: str) -> str:
    return await launch(
        gql,
        {
            "target": {"assets": {"names": ["top"], "downstream": True}},
            "partitions": {"range": {"start": start, "end": end}},
        },
    )


async def active_runs(database: Database) -> list[tuple[str, str]]:
    async with database.read() as session:
        rows = await session.execute(
            select(RunRecord.job_name, RunRecord.partition_key).order_by(RunRecord.id)
        )
        return [(str(a), str(k)) for a, k in rows.all()]


async def test_downstream_slots_wait_for_their_upstream(
    gql: GraphQLRunner, database: Database, definitions: Definitions, clock: FrozenClock
) -> None:
    await launch_diamond(gql, "2024-01-01", "2024-01-02")
    launcher = InlineLauncher(definitions, max_active=16, hold=True)
    state = DaemonState()
    await plan_backfills(database, definitions, clock, state)
    await launch_runs(database, definitions, clock, launcher, state)
    await launch_runs(database, definitions, clock, launcher, state)
    # Only the roots: every other slot needs a `top` partition that has not succeeded yet.
    assert await active_runs(database) == [("top", "2024-01-01"), ("top", "2024-01-02")]
    launcher.release()
    await drive(database, definitions, clock, launcher, state)
    async with database.read() as session:
        statuses = (await session.execute(select(SlotRecord.status))).scalars().all()
    assert len(statuses) == 8 and {s.value for s in statuses} == {"succeeded"}
    order = await active_runs(database)
    for day in ("2024-01-01", "2024-01-02"):
        assert order.index(("bottom", day)) > order.index(("left", day))
        assert order.index(("bottom", day)) > order.index(("right", day))
        assert order.index(("left", day)) > order.index(("top", day))


async def test_an_upstream_failure_skips_exactly_its_downstream(
    gql: GraphQLRunner,
    database: Database,
    definitions: Definitions,
    clock: FrozenClock,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("BACKFILLER_TEST_FAIL", "right/2024-01-02")
    backfill_id = await launch_diamond(gql, "2024-01-01", "2024-01-03")
    await drive(database, definitions, clock, InlineLauncher(definitions), DaemonState())
    backfill = (await gql(COUNTS, {"id": backfill_id}))["backfill"]
    assert backfill["status"] == "COMPLETED_FAILED"
    assert backfill["counts"] == {
        "total": 12,
        "pending": 0,
        "succeeded": 10,
        "failed": 1,
        "skipped": 1,
    }
    async with database.read() as session:
        skipped = (
            await session.execute(
                select(SlotRecord.partition_key, SlotRecord.skip_reason).where(
                    SlotRecord.skip_reason.is_not(None)
                )
            )
        ).all()
    assert [tuple(r) for r in skipped] == [("bottom/2024-01-02", "upstream_failed")]
    assert ("bottom", "2024-01-02") not in await active_runs(database)


async def test_planning_a_big_graph_yields_to_claims_between_chunks(
    gql: GraphQLRunner,
    database: Database,
    definitions: Definitions,
    clock: FrozenClock,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Out of time after every chunk: one chunk per tick, and the graph still completes.
    monkeypatch.setattr(daemon_assets, "PLAN_SECONDS_PER_TICK", 0.0)
    await launch_diamond(gql, "2024-01-01", "2024-01-03")
    state = DaemonState(plan_window=2)
    report = await plan_backfills(database, definitions, clock, state)
    assert report.planned == 2
    report = await plan_backfills(database, definitions, clock, state)
    assert report.planned == 2
    launcher = InlineLauncher(definitions, max_active=16)
    await drive(database, definitions, clock, launcher, state)
    data = await gql("{ backfills(first: 1) { nodes { status counts { total succeeded } } } }")
    assert data["backfills"]["nodes"] == [
        {"status": "COMPLETED_SUCCESS", "counts": {"total": 12, "succeeded": 12}}
    ]


async def test_a_claim_of_one_run_finds_the_first_ready_slot_past_many_waiting(
    gql: GraphQLRunner, database: Database, definitions: Definitions, clock: FrozenClock
) -> None:
    # 11 roots held: the 33 pending slots below them (left, right, bottom of each day) wait,
    # more than one slice of verdicts; the next ready slot is the 12th day's root.
    await launch_diamond(gql, "2024-01-01", "2024-01-20")
    state = DaemonState()
    await plan_backfills(database, definitions, clock, state)
    held = InlineLauncher(definitions, max_active=11, hold=True)
    await launch_runs(database, definitions, clock, held, state)
    one = InlineLauncher(definitions, max_active=1, hold=True)
    await launch_runs(database, definitions, clock, one, state)
    runs = await active_runs(database)
    assert runs[:11] == [("top", f"2024-01-{d:02d}") for d in range(1, 12)]
    assert runs[11:] == [("top", "2024-01-12")]
