"""Triggers with real server, daemon and worker processes.

- a job's run presses a trigger's button and launches a backfill through ``context.client``;
- an interval trigger runs in the daemon and its cursor survives daemon restarts.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import TypeVar

import pytest
from sqlalchemy import create_engine, select
from sqlalchemy.orm import Session

from backfiller import BackfillRequest, Client, PartitionKeys
from backfiller.client import BackfillStatus, TriggerOutcome
from backfiller.storage.engine import sync_database_url
from backfiller.storage.trigger_records import TriggerEvaluationRecord, TriggerStateRecord
from tests.support import LiveProcess, LiveServer, wait_for

pytestmark = pytest.mark.acceptance

DEFINITIONS = "tests.integration.trigger_job_defs:definitions"
T = TypeVar("T")


def start_daemon(database_url: str, env: dict[str, str]) -> LiveProcess:
    return LiveProcess(
        [
            "daemon",
            "--database",
            database_url,
            "--definitions",
            DEFINITIONS,
            "--workers",
            "1",
            "--grace-seconds",
            "1",
        ],
        env=env,
    )


@pytest.fixture
def marker_dir(tmp_path: Path) -> Path:
    folder = tmp_path / "markers"
    folder.mkdir()
    return folder


@pytest.fixture
def server(database_url: str, marker_dir: Path) -> Iterator[LiveServer]:
    live = LiveServer(
        database_url, DEFINITIONS, env={"BACKFILLER_TEST_MARKER_DIR": str(marker_dir)}
    )
    yield live
    live.stop()


def test_a_jobs_run_launches_another_backfill_through_its_client(
    database_url: str, server: LiveServer, marker_dir: Path
) -> None:
    (marker_dir / "ready").touch()
    daemon = start_daemon(
        database_url,
        {"BACKFILLER_URL": server.url, "BACKFILLER_TEST_MARKER_DIR": str(marker_dir)},
    )
    try:
        with Client(server.url) as client:
            # Nothing in the condition depends on the parent: pressing the button from here
            # with a dry run shows what the run will launch.
            dry = client.evaluate_trigger("child_when_ready", dry_run=True)
            assert dry.outcome is TriggerOutcome.LAUNCHED and dry.backfills == ()
            parent = client.launch_backfill(
                BackfillRequest(job="parent", partitions=PartitionKeys(["go"]))
            )
            finished = client.wait(parent.id, poll_interval=0.1, timeout=120)
            assert finished.status is BackfillStatus.COMPLETED_SUCCESS, daemon.output()
            [run] = list(client.runs(parent.id))

            children = list(client.list_backfills(job="child"))
            by_key = {b.partitions: b for b in children}
            assert set(by_key) == {PartitionKeys(["x1"]), PartitionKeys(["x2"])}
            from_trigger = by_key[PartitionKeys(["x1"])]
            direct = by_key[PartitionKeys(["x2"])]
            # The trigger's backfill is created by the trigger, pressed by the run.
            assert from_trigger.creator == "trigger:child_when_ready"
            trigger = client.trigger("child_when_ready")
            assert trigger is not None and trigger.last_evaluation is not None
            assert trigger.last_evaluation.actor is not None
            assert run.id in trigger.last_evaluation.actor
            # The backfill the run launched itself names the run as its creator.
            assert direct.creator is not None and run.id in direct.creator
            assert direct.title == "launched by the parent's run"

            for child in (from_trigger, direct):
                final = client.wait(child.id, poll_interval=0.1, timeout=120)
                assert final.status is BackfillStatus.COMPLETED_SUCCESS
    finally:
        daemon.stop()


def evaluations(database_url: str) -> tuple[str | None, list[str | None]]:
    engine = create_engine(sync_database_url(database_url))
    try:
        with Session(engine) as session:
            state = session.get(TriggerStateRecord, "every_second")
            reasons = session.execute(
                select(TriggerEvaluationRecord.skip_reason)
                .where(TriggerEvaluationRecord.trigger_name == "every_second")
                .order_by(TriggerEvaluationRecord.id)
            ).scalars()
            return (state.cursor if state else None), list(reasons)
    finally:
        engine.dispose()


def test_an_interval_trigger_runs_in_the_daemon_and_its_cursor_survives_restarts(
    database_url: str,
) -> None:
    first = start_daemon(database_url, {})
    try:
        wait_for(
            "two evaluations", lambda: int(evaluations(database_url)[0] or "0") >= 2, timeout=90
        )
    finally:
        first.stop()
    cursor, _ = evaluations(database_url)
    assert cursor is not None
    seen = int(cursor)
    second = start_daemon(database_url, {})
    try:
        wait_for(
            "an evaluation by the new daemon",
            lambda: int(evaluations(database_url)[0] or "0") > seen,
            timeout=90,
        )
    finally:
        second.stop()
    cursor, reasons = evaluations(database_url)
    assert cursor is not None
    # One history across both daemons: the count never restarted from 1.
    assert reasons == [f"evaluation {n}" for n in range(1, int(cursor) + 1)]
