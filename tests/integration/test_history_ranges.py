"""The history's partitions on PostgreSQL (``storage.history_partitions``): the daemons make
ranges ahead; retention drops a range whole (its runs, slots, log lines and events, and its
backfills' rows) once none of its backfills is kept, archiving its rows first when told to,
and waits rather than queue behind a long read of the tables."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest
from sqlalchemy import create_engine, text

from backfiller.daemon.retention import Retention
from backfiller.definitions.loading import Definitions
from backfiller.services.pruning import Cutoffs, Pruner
from backfiller.storage import Database
from backfiller.storage.history_partitions import PARTITIONED, handed_out, make_ahead, ranges
from tests.conftest import RANGES_BASE
from tests.integration.test_retention import old_history, running_backfill, settings
from tests.support import FrozenClock, GraphQLRunner

pytestmark = pytest.mark.usefixtures("only_postgres")

FIRST = RANGES_BASE + 1
"""The first old backfill's id (``history_ranges``)."""


async def where_rows_are(database: Database, table: str) -> dict[int, str]:
    """The partition of each backfill's rows of ``table``."""
    found = await database.query(
        lambda conn: conn.execute(
            text(f"SELECT DISTINCT backfill_id, tableoid::regclass::text FROM {table}")
        ).all()
    )
    return {int(b): str(p) for b, p in found}


async def count_rows(database: Database, table: str) -> int:
    query = text(f"SELECT count(*) FROM {table}")
    return int(await database.query(lambda conn: conn.execute(query).scalar_one()))


async def exists(database: Database, name: str) -> bool:
    found = await database.query(
        lambda conn: conn.execute(text("SELECT to_regclass(:n)"), {"n": name}).scalar()
    )
    return found is not None


async def test_a_daemon_makes_the_next_range_once_the_newest_is_in_use(
    database: Database,
    clock: FrozenClock,
    history_ranges: Callable[[int], None],
) -> None:
    await database.transact(
        lambda conn: conn.execute(text("SELECT setval('backfills_id_seq', :v)"), {"v": FIRST})
    )
    await Retention(database, clock).tick()
    made = await database.query(ranges)
    newest = made[-1]
    assert newest.low == FIRST + 1 and newest.high == FIRST + 1001  # above every id handed out
    for table in PARTITIONED:
        assert await exists(database, f"{table}_b{newest.low}")
    # A whole range is ahead: nothing more to make until it is in use.
    assert await database.transact(lambda conn: make_ahead(conn, clock())) is None
    await database.transact(
        lambda conn: conn.execute(text("SELECT setval('backfills_id_seq', :v)"), {"v": FIRST + 1})
    )
    assert await database.query(handed_out) == FIRST + 1
    after = await database.transact(lambda conn: make_ahead(conn, clock()))
    assert after is not None and (after.low, after.high) == (newest.high, newest.high + 1000)


async def test_a_range_goes_whole_once_none_of_its_backfills_is_kept(
    gql: GraphQLRunner,
    database: Database,
    definitions: Definitions,
    clock: FrozenClock,
    history_ranges: Callable[[int], None],
    tmp_path: Path,
) -> None:
    history_ranges(2)
    old = await old_history(gql, database, definitions, clock)
    assert [int(b.removeprefix("bf_")) for b in old] == [FIRST, FIRST + 1]
    running = int((await running_backfill(gql, database, definitions, clock)).removeprefix("bf_"))
    for table in PARTITIONED:
        before = await where_rows_are(database, table)
        assert before[FIRST] == before[FIRST + 1] == f"{table}_b{FIRST}", table
        assert before.get(running, f"{table}_b{FIRST + 2}") == f"{table}_b{FIRST + 2}", table
    held = {table: await count_rows(database, table) for table in ("run_logs", "runs", "slots")}
    lines = held["run_logs"]
    kept = await backfill_read(gql, running)

    archive = tmp_path / "archive"
    pruner = Pruner(database, settings(archive_url=str(archive), batch_rows=4))
    counted = Pruner(database, settings())
    counts = await counted.count(Cutoffs.of(pruner.settings, clock()))
    assert [d.range.low for d in counted.dropped] == [FIRST]  # counting drops nothing
    assert counts["backfills"] == 2 and counts["runs"] > 0
    assert await exists(database, f"run_logs_b{FIRST}")

    deleted = await pruner.prune(Cutoffs.of(pruner.settings, clock()))
    assert [(d.range.low, d.range.high) for d in pruner.dropped] == [(FIRST, FIRST + 2)]
    assert pruner.dropped[0].backfills == (FIRST, FIRST + 1)
    assert deleted["run_logs"] == lines and deleted["backfills"] == 2
    for table in PARTITIONED:
        assert not await exists(database, f"{table}_b{FIRST}")
        assert set(await where_rows_are(database, table)) <= {running}, table
    # The old backfills are gone with their runs, in one transaction; the running one is whole.
    assert await backfill_read(gql, FIRST) is None
    assert await backfill_read(gql, running) == kept
    for table in ("runs", "slots"):
        assert deleted[table] == held[table] - await count_rows(database, table)
    archived = [
        json.loads(line)
        for path in sorted((archive / "run_logs").rglob("*.jsonl"))
        for line in path.read_text().splitlines()
    ]
    assert len(archived) == lines and {r["backfill_id"] for r in archived} == {FIRST, FIRST + 1}
    assert len({r["id"] for r in archived}) == lines  # each line once
    kinds = {
        json.loads(line)["kind"]
        for path in (archive / "backfill_events" / str(FIRST)).iterdir()
        for line in path.read_text().splitlines()
    }
    assert {"launched", "completed"} <= kinds
    for table in ("runs", "slots", "backfills"):
        ids = {
            json.loads(line)["id"]
            for path in (archive / table).rglob("*.jsonl")
            for line in path.read_text().splitlines()
        }
        assert len(ids) == deleted[table] > 0, table  # each dropped row archived once


async def test_dropping_waits_for_no_long_read_and_comes_back_to_it(
    gql: GraphQLRunner,
    database: Database,
    database_url: str,
    definitions: Definitions,
    clock: FrozenClock,
    history_ranges: Callable[[int], None],
) -> None:
    history_ranges(2)
    await old_history(gql, database, definitions, clock)
    await running_backfill(gql, database, definitions, clock)
    engine = create_engine(database_url)
    reader = engine.connect()
    try:
        # A long report over the log lines holds its lock on them until it ends.
        reader.execute(text("SELECT count(*) FROM run_logs"))
        pruner = Pruner(database, settings())
        deleted = await pruner.prune(Cutoffs.of(pruner.settings, clock()))
        # Nothing of the range went: its backfills are all still there, with their runs.
        assert sum(deleted.values()) == 0 and pruner.dropped == []
        assert await exists(database, f"run_logs_b{FIRST}")
        assert await backfill_read(gql, FIRST) is not None
    finally:
        reader.rollback()
        reader.close()
        engine.dispose()
    deleted = await pruner.prune(Cutoffs.of(pruner.settings, clock()))
    assert [d.range.low for d in pruner.dropped] == [FIRST] and deleted["run_logs"] > 0
    assert deleted["backfills"] == 2
    assert not await exists(database, f"run_logs_b{FIRST}")


async def backfill_read(gql: GraphQLRunner, pk: int) -> dict[str, object] | None:
    """A backfill as the API shows it, counts and runs included (None: there is none)."""
    data = await gql(
        "query($id: ID!) { backfill(id: $id) { id status counts { total succeeded failed "
        "running queued } runs(first: 100) { edges { node { id status } } } } }",
        {"id": f"bf_{pk}"},
    )
    found: dict[str, object] | None = data["backfill"]
    return found
