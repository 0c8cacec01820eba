"""Pause and cancel withdraw the runs published on the broker, on RabbitMQ and on Redis.

PostgreSQL; API, one daemon and one Celery worker (2 processes) as real processes. A backfill
of short runs keeps hundreds of them published ahead of the worker. Paused, its published
runs leave QUEUED within about a second (the figure is printed), back to PENDING, and no
CANCELED run is left behind; resumed, every partition executes exactly once (the job's own
marks). Canceled, no run is left QUEUED or RUNNING, each canceled partition has one CANCELED
run at most, and no partition executes after the cancel settled, though the withdrawn runs'
tasks are still delivered to the worker (and refused). Every success executed; a partition
that executed without one is a run the cancel stopped while it was executing.
"""

from __future__ import annotations

import time
from collections import Counter
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from tests.acceptance.celery.support import Cluster, broker_url, cluster, executions, overlaps
from tests.acceptance.daemon_support import gql, launch, read, wait_for, wait_status

pytestmark = [pytest.mark.acceptance, pytest.mark.slow]

STEER = "mutation($id: ID!) {{ {verb}Backfill(input: {{id: $id}}) {{ userErrors {{ message }} }} }}"
PUBLISHED = 150
"""Runs QUEUED (published, not started) at least, when the backfill is paused or canceled."""
SETTLE_SECONDS = 10.0
"""The generous bound the tests wait (the promise is 2 s; the time taken is printed)."""


def _steer(c: Cluster, verb: str, backfill: str) -> None:
    answer = gql(c.api, STEER.format(verb=verb), {"id": backfill})
    assert answer[f"{verb}Backfill"]["userErrors"] == []


def _many_published(c: Cluster, backfill: str) -> None:
    def published() -> bool:
        return int(read(c.api, backfill)["counts"]["queued"]) >= PUBLISHED

    wait_for(f"{PUBLISHED} runs published", published, timeout=60, every=0.05)


def _settled(c: Cluster, backfill: str, since: float, what: str) -> dict[str, Any]:
    """The backfill once no run of it is QUEUED; prints how long that took after ``since``."""

    def none_queued() -> dict[str, Any] | None:
        found = read(c.api, backfill)
        return found if int(found["counts"]["queued"]) == 0 else None

    found: dict[str, Any] = wait_for("no run QUEUED", none_queued, SETTLE_SECONDS, every=0.05)
    print(f"{what}: no run QUEUED {time.monotonic() - since:.2f} s after the answer")
    return found


def _days(first: str, count: int) -> tuple[str, str, list[str]]:
    start = time.strptime(first, "%Y-%m-%d")
    keys = [
        time.strftime("%Y-%m-%d", time.gmtime(time.mktime(start) + 86400 * i + 43200))
        for i in range(count)
    ]
    return keys[0], keys[-1], keys


@pytest.mark.parametrize("name", ["rabbitmq", "redis"])
def test_pause_and_cancel_withdraw_published_runs(
    name: str, database_url: str, marks: Path
) -> None:
    broker = broker_url(name)
    with cluster(database_url, broker, marks) as c:
        c.start_server()
        worker = c.start_worker(concurrency=2)
        c.start_daemon()
        worker.wait_ready()
        config = {"seconds": 0.02}

        # Pause: the published runs go back to PENDING, with no CANCELED run left behind.
        first, last, keys = _days("2021-01-01", 200)
        paused = launch(c.api, "recorded", first, last, runConfig=config)
        _many_published(c, paused)
        _steer(c, "pause", paused)
        found = _settled(c, paused, time.monotonic(), "pause")
        assert found["status"] == "PAUSED" and int(found["counts"]["pending"]) >= PUBLISHED
        assert int(found["counts"]["canceled"]) == 0
        wait_for("the runs executing to end", lambda: read(c.api, paused)["counts"]["running"] == 0)
        assert [r for r in c.runs(paused) if r["status"] == "CANCELED"] == []
        ran = sum(len(ids) for ids in executions(marks).values())
        time.sleep(2)  # paused: nothing executes, though the withdrawn tasks are delivered
        assert sum(len(ids) for ids in executions(marks).values()) == ran
        _steer(c, "resume", paused)
        done = wait_status(c.api, paused, {"COMPLETED_SUCCESS", "COMPLETED_FAILED"}, timeout=90)
        assert int(done["counts"]["succeeded"]) == len(keys)
        runs = c.runs(paused)
        assert Counter(r["status"] for r in runs) == {"SUCCESS": len(keys)}
        ran_paused = executions(marks)
        assert sorted(ran_paused) == keys
        assert {key: ids for key, ids in ran_paused.items() if len(ids) != 1} == {}
        # The withdrawn runs' tasks reached the worker after all, and were refused.
        assert "refused: withdrawn" in worker.output()

        # Cancel: no run left QUEUED or RUNNING, no partition executed after it settled.
        first, last, keys = _days("2022-01-01", 200)
        canceled = launch(c.api, "recorded", first, last, runConfig=config)
        _many_published(c, canceled)
        _steer(c, "cancel", canceled)
        answered = datetime.now(UTC)
        _settled(c, canceled, time.monotonic(), "cancel")
        found = wait_status(c.api, canceled, {"CANCELED"}, timeout=SETTLE_SECONDS)
        assert int(found["counts"]["queued"]) + int(found["counts"]["running"]) == 0
        before = executions(marks)
        time.sleep(2)  # the withdrawn runs' tasks are delivered meanwhile, and refused
        assert executions(marks) == before
        runs = c.runs(canceled)
        assert not [r for r in runs if r["status"] in ("QUEUED", "RUNNING")]
        per_key = Counter(r["partitionKey"] for r in runs if r["status"] == "CANCELED")
        assert set(per_key.values()) <= {1}
        succeeded = {r["partitionKey"] for r in runs if r["status"] == "SUCCESS"}
        assert not succeeded & set(per_key)
        executed = {k for k in keys if k in before}
        # A run the cancel stopped after its job wrote its mark (in the log line that follows
        # it, say) is CANCELED though its body ran: only one that was executing at the answer.
        ended_by_cancel = {
            r["partitionKey"]
            for r in runs
            if r["status"] == "CANCELED"
            and r["startedAt"] is not None
            and datetime.fromisoformat(r["startedAt"]) < answered
        }
        unexplained = [r for r in runs if r["partitionKey"] in executed ^ succeeded]
        assert succeeded <= executed, unexplained  # no success without its execution
        assert executed - succeeded <= ended_by_cancel, unexplained
        print(f"cancel: {len(executed - succeeded)} runs stopped after their job's mark")
        assert overlaps(marks) == []
