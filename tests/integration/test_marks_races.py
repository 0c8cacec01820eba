"""Marks racing the daemon's claims, on the real database: a partition is either claimed (its
run is active) or marked, never both.

On SQLite writers take turns; on PostgreSQL a mark locks the backfill rows, then takes the
slots ``SKIP LOCKED`` (a slot a claim holds counts as running), so a mark and a claim of one
partition never both commit.
"""

from __future__ import annotations

import asyncio

import pytest
from sqlalchemy import create_engine, select, text
from sqlalchemy.pool import NullPool

from backfiller.daemon.ticks import DaemonState, launch_runs, plan_backfills
from backfiller.definitions.loading import Definitions
from backfiller.launchers import InlineLauncher
from backfiller.storage import Database
from backfiller.storage.engine import sync_database_url
from backfiller.storage.mark_records import PartitionMarkRecord
from tests.integration.test_daemon_ticks import definitions
from tests.integration.test_marks import MARK, mark_input
from tests.support import FrozenClock, GraphQLRunner, launch

__all__ = ["definitions"]

DAYS = [f"2024-05-{d:02d}" for d in range(1, 32)] + [f"2024-06-{d:02d}" for d in range(1, 30)]


async def marked_keys(database: Database) -> set[str]:
    async with database.read() as session:
        rows = await session.execute(select(PartitionMarkRecord.partition_key))
        return {str(k) for (k,) in rows.all()}


async def test_marks_and_claims_of_the_same_partitions_never_both_win(
    gql: GraphQLRunner, database: Database, definitions: Definitions, clock: FrozenClock
) -> None:
    await launch(gql, "noop", DAYS[0], DAYS[-1])  # MISSING
    launcher = InlineLauncher(definitions, max_active=1_000, hold=True)  # runs stay active
    state = DaemonState()
    answers: dict[str, dict[str, object]] = {}

    async def daemon() -> None:
        for _ in range(40):
            await plan_backfills(database, definitions, clock, state)
            await launch_runs(database, definitions, clock, launcher, state)
            await asyncio.sleep(0)

    async def marker(keys: list[str]) -> None:
        for key in keys:
            result = await gql(MARK, {"input": mark_input("noop", keys=[key])})
            answers[key] = result["markPartitions"]

    await asyncio.gather(daemon(), *(marker(DAYS[i::4]) for i in range(4)))
    claimed = {t.partition_key for t in launcher.submitted}
    marked = await marked_keys(database)
    assert not claimed & marked, sorted(claimed & marked)
    for key, answer in answers.items():
        if key in marked:
            assert answer["marked"] == 1
        else:
            assert answer["runningPartitions"] == [key], (key, answer)
    # Every partition ended one way or the other: claimed (and so never marked) or marked
    # (and so skipped by the MISSING backfill, never claimed).
    assert claimed | marked == set(DAYS)


async def test_a_slot_held_by_a_claim_under_way_counts_as_running(
    gql: GraphQLRunner,
    database: Database,
    database_url: str,
    definitions: Definitions,
    clock: FrozenClock,
) -> None:
    if not database_url.startswith("postgresql"):
        pytest.skip("SQLite has one writer at a time: no claim is under way during a mark")
    await launch(gql, "noop", DAYS[0], DAYS[2])
    await plan_backfills(database, definitions, clock, DaemonState())
    engine = create_engine(sync_database_url(database_url), poolclass=NullPool)
    try:
        with engine.connect() as claim:
            # What a claim does first: lock the slot (here without claiming it yet).
            claim.execute(
                text("SELECT id FROM slots WHERE partition_key = :k FOR UPDATE"), {"k": DAYS[1]}
            )
            answer = (await gql(MARK, {"input": mark_input("noop", keys=DAYS[:3])}))[
                "markPartitions"
            ]
            assert answer["marked"] == 0
            assert answer["runningPartitions"] == [DAYS[1]]
            claim.rollback()
    finally:
        engine.dispose()
    assert await marked_keys(database) == set()
    answer = (await gql(MARK, {"input": mark_input("noop", keys=DAYS[:3])}))["markPartitions"]
    assert answer["marked"] == 3
