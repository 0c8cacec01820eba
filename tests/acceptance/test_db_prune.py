"""``backfiller db prune`` as an operator runs it: a dry run that counts and changes nothing,
then the prune, each printing the rows and the space per table."""

from __future__ import annotations

from collections.abc import Callable

from sqlalchemy import func, select

from backfiller.daemon.ticks import DaemonState
from backfiller.definitions.loading import Definitions
from backfiller.launchers import InlineLauncher
from backfiller.storage import Database
from backfiller.storage.records import BackfillRecord, RunRecord
from tests.acceptance.test_server_commands import backfiller
from tests.integration.test_daemon_ticks import drive
from tests.integration.test_retention import OLD, launch, table_counts
from tests.support import FrozenClock, GraphQLRunner


def _rows(output: str) -> dict[str, int]:
    found: dict[str, int] = {}
    for line in output.splitlines():
        parts = line.split()
        if len(parts) >= 2 and parts[1].replace(",", "").isdigit():
            found[parts[0]] = int(parts[1].replace(",", ""))
    return found


async def test_db_prune_counts_then_deletes(
    gql: GraphQLRunner,
    database: Database,
    database_url: str,
    definitions: Definitions,
    clock: FrozenClock,
    history_ranges: Callable[[int], None],
    is_postgres: bool,
) -> None:
    history_ranges(1)  # PostgreSQL: the backfill's lines and events in a range of their own
    # The fixture's clock is in June 2026: this history is older than 30 days.
    await launch(gql, {"job": "daily_sales"}, *OLD)
    await drive(database, definitions, clock, InlineLauncher(definitions), DaemonState())
    before = await table_counts(database)

    dry = backfiller("db", "prune", "--older-than", "30d", "--dry-run", "--database", database_url)
    assert dry.returncode == 0, dry.stderr
    assert "dry run: nothing was deleted" in dry.stdout
    counted = _rows(dry.stdout)
    assert counted["runs"] == 10 and counted["slots"] == 10 and counted["backfills"] == 1
    assert counted["audit_log"] == 0  # kept unless --audit
    assert counted["run_logs"] > 0 and counted["backfill_events"] > 0
    assert await table_counts(database) == before
    # On PostgreSQL, the range goes whole: its partitions are named, with their rows.
    ranged = "would drop the partitions of backfills 1000001 to 1000001: run_logs_b1000001 ("
    assert (ranged in dry.stdout) == is_postgres, dry.stdout

    done = backfiller("db", "prune", "--older-than", "30d", "--database", database_url)
    assert done.returncode == 0, done.stderr
    assert _rows(done.stdout) == counted
    assert (ranged.replace("would drop", "dropped") in done.stdout) == is_postgres, done.stdout
    async with database.read() as session:
        for record in (RunRecord, BackfillRecord):
            left = await session.execute(select(func.count()).select_from(record))
            assert left.scalar_one() == 0
    bad = backfiller("db", "prune", "--older-than", "soon", "--database", database_url)
    assert bad.returncode != 0 and "30d" in bad.stderr
