"""Retention: expired history goes, in small batches, beside a running daemon; what the API
shows of partitions (their statuses, ``reprocess: MISSING``, the assets' statuses) does not
change; a backfill that is not finished is never touched; a dry run changes nothing."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import func, select, text

from backfiller.config import HistorySettings
from backfiller.daemon.ticks import DaemonState, launch_runs, plan_backfills
from backfiller.definitions.loading import Definitions
from backfiller.launchers import InlineLauncher
from backfiller.services.pruning import Cutoffs, Pruner
from backfiller.storage import Database
from backfiller.storage.metadata import metadata
from backfiller.storage.records import RunRecord
from backfiller.storage.retention import bytes_per_row
from tests.conftest import RANGES_BASE
from tests.integration.test_daemon_ticks import drive
from tests.support import LAUNCH, FrozenClock, GraphQLRunner

VIEWS = """
query($running: ID!) {
  job(name: "daily_sales") { partitionStatusRanges { status startKey endKey count } }
  raw: asset(name: "raw_events") { partitionStatusRanges { status count } }
  visits: asset(name: "daily_visits") { partitionStatusRanges { status count } }
  running: backfill(id: $running) {
    status counts { total pending queued running succeeded failed canceled skipped }
    partitionStatusRanges { status startKey endKey count }
    runs(first: 100) { nodes { id partitionKey status } }
    events { nodes { kind } }
  }
}
"""
PREVIEW = """
mutation {
  previewBackfill(input: {target: {job: "daily_sales"}, reprocess: MISSING,
      partitions: {range: {start: "2024-01-01", end: "2024-01-15"}}}) {
    preview { total runs skipped skippedPartitions { key reason } }
  }
}
"""
OLD = "2024-01-01", "2024-01-10"


async def launch(gql: GraphQLRunner, target: dict[str, Any], start: str, end: str) -> str:
    data = await gql(
        LAUNCH,
        {"input": {"target": target, "partitions": {"range": {"start": start, "end": end}}}},
    )
    assert data["launchBackfill"]["userErrors"] == [], data
    backfill_id: str = data["launchBackfill"]["backfill"]["id"]
    return backfill_id


async def table_counts(database: Database) -> dict[str, int]:
    async with database.read() as session:
        return {
            t.name: int((await session.execute(select(func.count()).select_from(t))).scalar_one())
            for t in metadata.sorted_tables
        }


async def old_history(
    gql: GraphQLRunner, database: Database, definitions: Definitions, clock: FrozenClock
) -> list[str]:
    """Two finished backfills (a job's, and an asset backfill of raw_events and its
    downstream daily_visits); then 100 days pass."""
    done = [
        await launch(gql, {"job": "daily_sales"}, *OLD),
        await launch(gql, {"assets": {"names": ["raw_events", "daily_visits"]}}, *OLD),
    ]
    await drive(database, definitions, clock, InlineLauncher(definitions), DaemonState())
    clock.advance(days=100)
    return done


async def running_backfill(
    gql: GraphQLRunner, database: Database, definitions: Definitions, clock: FrozenClock
) -> str:
    """A backfill whose runs are claimed (QUEUED) and not over."""
    running = await launch(gql, {"job": "daily_sales"}, "2024-02-01", "2024-02-05")
    state = DaemonState()
    await plan_backfills(database, definitions, clock, state)
    await launch_runs(database, definitions, clock, InlineLauncher(definitions, hold=True), state)
    return running


def settings(**overrides: Any) -> HistorySettings:
    return HistorySettings(backfill_days=90, trigger_evaluation_days=30, **overrides)


async def test_pruning_keeps_every_partition_view_and_the_running_backfill(
    gql: GraphQLRunner,
    database: Database,
    definitions: Definitions,
    clock: FrozenClock,
    history_ranges: Callable[[int], None],
) -> None:
    history_ranges(2)  # PostgreSQL: the old backfills' lines and events go with their range
    old = await old_history(gql, database, definitions, clock)
    running = await running_backfill(gql, database, definitions, clock)
    views = await gql(VIEWS, {"running": running})
    preview = await gql(PREVIEW)
    assert views["running"]["counts"]["queued"] == 5
    assert preview["previewBackfill"]["preview"]["skipped"] == 10
    before = await table_counts(database)

    pruner = Pruner(database, settings(batch_rows=7))
    cutoffs = Cutoffs.of(pruner.settings, clock())
    expected = await pruner.count(cutoffs)
    assert await table_counts(database) == before  # counting changes nothing
    sizes = await database.query(bytes_per_row)
    deleted = await pruner.prune(cutoffs)

    assert {t: n for t, n in deleted.items() if n} == {t: n for t, n in expected.items() if n}
    assert deleted["backfills"] == 2 and deleted["runs"] == 30 and deleted["slots"] == 30
    assert deleted["run_logs"] > 0 and deleted["backfill_events"] >= 6
    assert all(sizes[t] > 0 for t in ("runs", "slots", "run_logs", "backfills"))
    after = await table_counts(database)
    assert after["partition_states"] == before["partition_states"]
    assert after["runs"] == 5  # the running backfill's
    assert await gql(VIEWS, {"running": running}) == views
    assert await gql(PREVIEW) == preview
    for gone in old:
        assert (await gql("query($id: ID!) { backfill(id: $id) { id } }", {"id": gone})) == {
            "backfill": None
        }
    assert not +await pruner.prune(cutoffs)  # nothing left


async def test_pruning_beside_a_running_daemon(
    gql: GraphQLRunner,
    database: Database,
    definitions: Definitions,
    clock: FrozenClock,
    history_ranges: Callable[[int], None],
    is_postgres: bool,
) -> None:
    history_ranges(2)  # PostgreSQL: the old backfills' range is dropped beside the daemon
    await old_history(gql, database, definitions, clock)
    running = await launch(gql, {"job": "daily_sales"}, "2024-02-01", "2024-02-20")
    pruner = Pruner(database, settings(batch_rows=1))  # a transaction a row: many turns
    daemon = drive(database, definitions, clock, InlineLauncher(definitions), DaemonState())
    deleted, _ = await asyncio.gather(pruner.prune(Cutoffs.of(pruner.settings, clock())), daemon)
    assert deleted["backfills"] == 2 and deleted["runs"] == 30
    assert [d.range.low for d in pruner.dropped] == ([RANGES_BASE + 1] if is_postgres else [])
    read = await gql(
        "query($id: ID!) { backfill(id: $id) { status counts { total succeeded } } }",
        {"id": running},
    )
    assert read["backfill"] == {
        "status": "COMPLETED_SUCCESS",
        "counts": {"total": 20, "succeeded": 20},
    }
    async with database.read() as session:
        runs = (await session.execute(select(func.count()).select_from(RunRecord))).scalar_one()
    assert runs == 20


async def test_a_dry_run_of_the_command_counts_and_deletes_nothing(
    gql: GraphQLRunner, database: Database, definitions: Definitions, clock: FrozenClock
) -> None:
    await old_history(gql, database, definitions, clock)
    before = await table_counts(database)
    pruner = Pruner(database, HistorySettings(backfill_days=None, trigger_evaluation_days=None))
    assert not +await pruner.prune(Cutoffs.of(pruner.settings, clock()))
    counted = await pruner.count(Cutoffs(clock(), clock(), clock()))
    assert counted["runs"] == 30 and counted["audit_log"] == before["audit_log"] > 0
    assert await table_counts(database) == before


async def test_old_evaluations_and_audit_entries_go_but_each_triggers_newest(
    gql: GraphQLRunner, database: Database, clock: FrozenClock
) -> None:
    evaluate = """mutation { evaluateTrigger(input: {name: "missing_sales_days", dryRun: true})
        { evaluation { id } userErrors { code } } }"""
    first = await gql(evaluate)
    clock.advance(days=40)
    await gql(evaluate)
    clock.advance(days=40)  # both evaluations are past 30 days now
    audit = (await table_counts(database))["audit_log"]
    pruner = Pruner(database, settings(audit_days=60))
    deleted = await pruner.prune(Cutoffs.of(pruner.settings, clock()))
    assert deleted["trigger_evaluations"] == 1 and deleted["audit_log"] == 1 < audit
    data = await gql('{ trigger(name: "missing_sales_days") { lastEvaluation { id } } }')
    assert data["trigger"]["lastEvaluation"]["id"] != first["evaluateTrigger"]["evaluation"]["id"]


async def test_archived_rows_and_log_files(
    gql: GraphQLRunner,
    database_url: str,
    definitions: Definitions,
    clock: FrozenClock,
    tmp_path: Path,
) -> None:
    logs, archive = tmp_path / "logs", tmp_path / "archive"
    database = Database(database_url, log_store=str(logs))
    try:
        gql.database = gql.services.database = database
        [job_backfill] = [await launch(gql, {"job": "daily_sales"}, *OLD)]
        await drive(database, definitions, clock, InlineLauncher(definitions), DaemonState())
        number = job_backfill.removeprefix("bf_")
        assert len(list((logs / number).iterdir())) == 10  # a folder per run
        page = await gql(
            "query($id: ID!) { backfill(id: $id) { runs(first: 1) { nodes { logs(first: 5) "
            "{ nodes { message } pageInfo { hasNextPage } } } } } }",
            {"id": job_backfill},
        )
        [run] = page["backfill"]["runs"]["nodes"]
        assert run["logs"]["nodes"][0]["message"].startswith("aggregating sales for 2024-01-")
        async with database.read() as session:
            in_rows = (await session.execute(text("SELECT COUNT(*) FROM run_logs"))).scalar_one()
        assert in_rows == 0
        clock.advance(days=100)
        pruner = Pruner(database, settings(archive_url=str(archive)), database.log_store)
        deleted = await pruner.prune(Cutoffs.of(pruner.settings, clock()))
        assert deleted["runs"] == 10 and deleted["run_logs"] == 0
        assert not (logs / number).exists()
        archived = [
            json.loads(line)
            for path in sorted((archive / "runs" / number).iterdir())
            for line in path.read_text().splitlines()
        ]
        assert sorted(r["partition_key"] for r in archived) == [
            f"2024-01-{d:02d}" for d in range(1, 11)
        ]
        assert {r["status"] for r in archived} == {"success"}
        [row] = [
            json.loads(line)
            for path in (archive / "backfills" / number).iterdir()
            for line in path.read_text().splitlines()
        ]
        assert row["job_name"] == "daily_sales" and row["status"] == "completed_success"
    finally:
        await database.dispose()


@pytest.mark.parametrize("age", ["30d", "12h", "90m", "7"])
def test_ages_of_the_command(age: str) -> None:
    from backfiller.cli.database import parse_age

    assert parse_age(age).total_seconds() > 0
