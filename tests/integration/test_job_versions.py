"""A job's partition ranges as a process keeps them (``storage.partition_states``: islands
read again when the job's version changes), across the history's ranges on PostgreSQL: the
version reads the runs of the backfills from a floor up, the range of the oldest backfill not
over, and still sees every change."""

from __future__ import annotations

from collections.abc import Callable

from backfiller.daemon.ticks import DaemonState
from backfiller.definitions.loading import Definitions
from backfiller.launchers import InlineLauncher
from backfiller.storage import Database
from backfiller.storage.partition_states import version_floor
from tests.conftest import RANGES_BASE
from tests.integration.test_daemon_ticks import drive
from tests.integration.test_retention import launch, running_backfill
from tests.support import FrozenClock, GraphQLRunner

FIRST = RANGES_BASE + 1
RANGES = '{ job(name: "daily_sales") { partitionStatusRanges { status startKey endKey count } } }'


async def ranges_shown(gql: GraphQLRunner) -> list[tuple[str, str, str, int]]:
    found = (await gql(RANGES))["job"]["partitionStatusRanges"]
    return [(r["status"], r["startKey"], r["endKey"], r["count"]) for r in found]


async def test_the_ranges_follow_backfills_run_whole_between_two_reads(
    gql: GraphQLRunner,
    database: Database,
    definitions: Definitions,
    clock: FrozenClock,
    history_ranges: Callable[[int], None],
    is_postgres: bool,
) -> None:
    history_ranges(1)  # PostgreSQL: the first backfill in a range of its own, the rest after
    await launch(gql, {"job": "daily_sales"}, "2024-01-01", "2024-01-03")
    await drive(database, definitions, clock, InlineLauncher(definitions), DaemonState())
    first = await ranges_shown(gql)
    assert first[0] == ("SUCCEEDED", "2024-01-01", "2024-01-03", 3)
    floor = await database.query(version_floor)
    # Its backfill is over: the floor is above its range on PostgreSQL, and its runs are not
    # read again (SQLite reads them all: one table).
    assert floor == (FIRST + 1 if is_postgres else 0)

    # A whole backfill between two reads: its runs are above the floor, and are seen.
    await launch(gql, {"job": "daily_sales"}, "2024-01-04", "2024-01-05")
    await drive(database, definitions, clock, InlineLauncher(definitions), DaemonState())
    assert (await ranges_shown(gql))[0] == ("SUCCEEDED", "2024-01-01", "2024-01-05", 5)
    assert await database.query(version_floor) == floor

    # Runs claimed and not over: QUEUED, and the floor stays below their backfill.
    await running_backfill(gql, database, definitions, clock)  # 2024-02-01 to 2024-02-05
    shown = await ranges_shown(gql)
    assert ("QUEUED", "2024-02-01", "2024-02-05", 5) in shown
    assert await database.query(version_floor) == floor
