"""The write shape on PostgreSQL: the updates that change no indexed column are HOT updates
(no new index entries), and the hot tables carry their autovacuum and fillfactor settings."""

from __future__ import annotations

import asyncio
import os

import pytest
from sqlalchemy import text

from backfiller.daemon.ticks import DaemonState
from backfiller.definitions.loading import Definitions
from backfiller.launchers import InlineLauncher
from backfiller.storage import Database
from tests.integration.test_daemon_ticks import definitions as definitions
from tests.integration.test_daemon_ticks import drive
from tests.support import FrozenClock, GraphQLRunner, launch

pytestmark = pytest.mark.skipif(
    not os.environ.get("BACKFILLER_TEST_DATABASE_URL"), reason="HOT updates are PostgreSQL's"
)
STATS = text(
    "SELECT relname, n_tup_upd, n_tup_hot_upd FROM pg_stat_user_tables "
    "WHERE relname IN ('backfills', 'partition_states')"
)

LEAST = {"backfills": 20, "partition_states": 100}  # 120 runs, each state updated at its end


async def _updates(database: Database) -> dict[str, tuple[int, int]]:
    rows = await database.query(lambda conn: conn.execute(STATS).all())
    return {str(name): (int(upd), int(hot)) for name, upd, hot in rows}


async def test_counter_and_partition_state_updates_are_hot(
    gql: GraphQLRunner, database: Database, definitions: Definitions, clock: FrozenClock
) -> None:
    # Each partition holds its table's settings (a partitioned table has none of its own).
    settings = await database.query(
        lambda conn: conn.execute(
            text(
                "SELECT i.inhparent::regclass::text, c.reloptions FROM pg_inherits i "
                "JOIN pg_class c ON c.oid = i.inhrelid "
                "WHERE i.inhparent IN ('runs'::regclass, 'slots'::regclass)"
            )
        ).all()
    )
    wanted = {"runs": "fillfactor=80", "slots": "fillfactor=90"}
    assert {table for table, _ in settings} == set(wanted)
    assert all(wanted[table] in options for table, options in settings)
    before = await _updates(database)
    await launch(gql, "noop", "2024-01-01", "2024-04-30")
    launcher = InlineLauncher(definitions, max_active=8)
    await drive(database, definitions, clock, launcher, DaemonState())
    after = before
    for _ in range(50):  # other backends' statistics reach the view within about a second
        await asyncio.sleep(0.1)
        after = await _updates(database)
        if all(after[t][0] - before[t][0] >= LEAST[t] for t in after):
            break
    for table, (updates, hot) in after.items():
        done, hot_done = updates - before[table][0], hot - before[table][1]
        assert done >= LEAST[table], (table, done)
        assert hot_done >= 0.9 * done, (table, hot_done, done)
