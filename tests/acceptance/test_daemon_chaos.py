"""Chaos: SIGKILL the daemon and its workers mid-backfill; nothing is lost or done twice.

Also two daemons at once on PostgreSQL: no slot is launched twice.
"""

from __future__ import annotations

import os
import random
import signal
import time
from collections import Counter
from typing import Any

import pytest
from sqlalchemy import create_engine, text

from tests.acceptance.daemon_support import (
    DEFINITIONS,
    Daemon,
    adds_up,
    launch,
    read,
    wait_for,
    wait_status,
)
from tests.support import LiveServer, live_server

pytestmark = [pytest.mark.acceptance, pytest.mark.slow]


server = live_server(DEFINITIONS)


def sync_url(database_url: str) -> str:
    return database_url.replace("sqlite+aiosqlite", "sqlite").replace("+psycopg", "+psycopg")


def rows(database_url: str, sql: str, **params: Any) -> list[Any]:
    engine = create_engine(sync_url(database_url))
    try:
        with engine.connect() as conn:
            return list(conn.execute(text(sql), params).all())
    finally:
        engine.dispose()


def check_each_partition_succeeded_once(database_url: str, backfill_pk: int, total: int) -> None:
    successes = rows(
        database_url,
        "SELECT partition_key, count(*) FROM runs WHERE backfill_id = :b AND status = 'success' "
        "GROUP BY partition_key",
        b=backfill_pk,
    )
    assert len(successes) == total
    assert {n for _, n in successes} == {1}, "a partition succeeded twice"
    slots = dict(
        rows(
            database_url,
            "SELECT status, count(*) FROM slots WHERE backfill_id = :b GROUP BY status",
            b=backfill_pk,
        )
    )
    assert slots == {"succeeded": total}
    active = rows(
        database_url,
        "SELECT count(*) FROM runs WHERE backfill_id = :b AND status IN ('queued', 'running')",
        b=backfill_pk,
    )
    assert active == [(0,)]
    attempts = rows(
        database_url,
        "SELECT slot_id, attempt, count(*) FROM runs WHERE backfill_id = :b "
        "GROUP BY slot_id, attempt HAVING count(*) > 1",
        b=backfill_pk,
    )
    assert attempts == []


def test_sigkill_of_the_daemon_at_random_moments_loses_nothing(
    server: LiveServer, database_url: str
) -> None:
    rng = random.Random(int(os.environ.get("BACKFILLER_CHAOS_SEED", "7")))
    backfill_id = launch(server, "steady", "2020-01-01", "2021-05-14", runConfig={"seconds": 0.01})
    total = read(server, backfill_id)["counts"]["total"]
    assert total == 500
    kills = 0
    lease = ["--lease-timeout", "6"]  # taken over 6 s after a kill, not the default 30 s
    daemon = Daemon(database_url, extra=lease)
    try:
        for _ in range(4):
            wait_for(
                "the daemon to make progress",
                lambda: read(server, backfill_id)["counts"]["succeeded"] > 0,
            )
            time.sleep(rng.uniform(0.3, 2.0))
            if read(server, backfill_id)["status"] == "COMPLETED_SUCCESS":
                break
            daemon.kill()
            kills += 1
            middle = read(server, backfill_id)
            assert adds_up(middle["counts"]), middle
            daemon = Daemon(database_url, extra=lease)
        backfill = wait_status(server, backfill_id, {"COMPLETED_SUCCESS"}, timeout=120)
    finally:
        daemon.stop()
    assert kills >= 2
    assert backfill["counts"]["succeeded"] == total and adds_up(backfill["counts"])
    check_each_partition_succeeded_once(database_url, int(backfill_id[3:]), total)


def test_sigkill_of_workers_fails_the_attempt_with_worker_lost_and_retries_it(
    server: LiveServer, database_url: str
) -> None:
    backfill_id = launch(server, "steady", "2024-01-01", "2024-01-20", runConfig={"seconds": 0.4})
    daemon = Daemon(database_url, workers=2)
    killed = 0
    try:
        for _ in range(3):
            wait_for(
                "a run on a worker", lambda: read(server, backfill_id)["counts"]["running"] > 0
            )
            time.sleep(0.2)
            pids = daemon.workers()
            assert pids, "the daemon has worker processes"
            os.kill(pids[0], signal.SIGKILL)
            killed += 1
            time.sleep(0.5)
        backfill = wait_status(server, backfill_id, {"COMPLETED_SUCCESS"}, timeout=120)
    finally:
        daemon.stop()
    assert backfill["counts"]["succeeded"] == 20 and adds_up(backfill["counts"])
    check_each_partition_succeeded_once(database_url, int(backfill_id[3:]), 20)
    lost = rows(
        database_url,
        "SELECT attempt, error_message FROM runs WHERE backfill_id = :b "
        "AND failure_reason = 'worker_lost'",
        b=int(backfill_id[3:]),
    )
    assert 1 <= len(lost) <= killed
    assert all("worker process died (signal 9)" in message for _, message in lost)


GIVEN_BACK = "its worker died before it started"


def _count(database_url: str, pk: int, where: str, **params: Any) -> int:
    sql = f"SELECT count(*) FROM runs WHERE backfill_id = :b AND {where}"
    return int(rows(database_url, sql, b=pk, **params)[0][0])


def test_a_killed_worker_gives_back_its_prefetched_runs_without_using_any_budget(
    server: LiveServer, database_url: str
) -> None:
    """10 ms runs: each worker holds the next few in its pipe (prefetch). SIGKILL a worker: its
    current run ends WORKER_LOST, the runs it held but never started go back to their slots
    (recorded as taken back, not lost), and every partition still succeeds once.

    Whether a worker holds runs at the moment of a kill depends on the daemon keeping ahead of
    its workers, which a loaded machine may not do at every instant: the test kills again
    (at most 10 times) until some prefetched run was given back."""
    backfill_id = launch(server, "steady", "2024-01-01", "2025-12-31", runConfig={"seconds": 0.01})
    pk = int(backfill_id[3:])
    daemon = Daemon(database_url, workers=2)
    killed = 0
    try:
        while killed < 10 and _count(database_url, pk, "error_message = :m", m=GIVEN_BACK) == 0:
            wait_for("runs to flow", lambda: read(server, backfill_id)["counts"]["succeeded"] > 0)
            time.sleep(0.3)
            if read(server, backfill_id)["status"] != "RUNNING":
                break
            pids = daemon.workers()
            assert pids, "the daemon has worker processes"
            os.kill(pids[0], signal.SIGKILL)
            killed += 1
            time.sleep(0.5)  # the daemon sees the death and gives back what the worker held
        backfill = wait_status(server, backfill_id, {"COMPLETED_SUCCESS"}, timeout=180)
    finally:
        daemon.stop()
    total = backfill["counts"]["total"]
    assert backfill["counts"]["succeeded"] == total == 731 and adds_up(backfill["counts"])
    check_each_partition_succeeded_once(database_url, pk, total)
    lost = _count(database_url, pk, "failure_reason = 'worker_lost'")
    given_back = _count(database_url, pk, "error_message = :m", m=GIVEN_BACK)
    print(f"{killed} kills: {lost} runs lost, {given_back} prefetched runs given back")
    assert lost <= killed, "only the run a worker was executing is lost"
    assert given_back >= 1, f"none of {killed} killed workers held a prefetched run"


@pytest.mark.postgresql_only("several daemons need PostgreSQL (SQLite runs one daemon)")
def test_two_daemons_on_postgresql_never_launch_one_slot_twice(
    server: LiveServer, database_url: str
) -> None:
    first = Daemon(database_url, workers=2)
    second = Daemon(database_url, workers=2)
    try:
        backfill_id = launch(server, "noop", "2020-01-01", "2025-06-22")
        total = read(server, backfill_id)["counts"]["total"]
        assert total == 2000
        backfill = wait_status(server, backfill_id, {"COMPLETED_SUCCESS"}, timeout=240)
    finally:
        first.stop()
        second.stop()
    assert backfill["counts"]["succeeded"] == 2000
    pk = int(backfill_id[3:])
    per_slot = rows(
        database_url,
        "SELECT slot_id, count(*) FROM runs WHERE backfill_id = :b GROUP BY slot_id",
        b=pk,
    )
    assert len(per_slot) == 2000
    assert Counter(n for _, n in per_slot) == {1: 2000}, "a slot was launched twice"
    owners = rows(
        database_url,
        "SELECT lease_owner, count(*) FROM runs WHERE backfill_id = :b GROUP BY lease_owner",
        b=pk,
    )
    assert len(owners) == 2, f"both daemons launched runs: {owners}"
    check_each_partition_succeeded_once(database_url, pk, 2000)
