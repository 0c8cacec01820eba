"""A Celery worker cut off from the broker while it runs 1-3 s jobs, on RabbitMQ and on Redis
(issue 31: 30 s against the default 20 s heartbeat timeout; here 15 s against the tests' 10 s).

The worker reaches the broker through a TCP proxy the test cuts; the daemon does not. Hearing
no heartbeat, the daemon reports the worker's runs ``WORKER_LOST`` and queues their retries;
the worker meanwhile finishes the runs that end before their ``stop_by``, keeps their ends and
sends them once the link is back. Those ends arrive before any retry of their partitions has
started, so they are the partitions' outcomes: no partition executes twice, and a result kept
through the cut is recorded.
"""

from __future__ import annotations

import time
from datetime import UTC, datetime
from pathlib import Path

import pytest

from tests.acceptance.celery.faults import judge
from tests.acceptance.celery.support import CeleryWorker, broker_url, cluster
from tests.acceptance.daemon_support import Proxy, launch, read, wait_for

pytestmark = [pytest.mark.acceptance, pytest.mark.slow]

CUT_SECONDS = 15
PARTITIONS = 16  # 2021-01-01 .. 2021-01-16
SLOTS = 4
PORTS = {"rabbitmq": 5672, "redis": 6379}


@pytest.mark.parametrize("broker_name", ["rabbitmq", "redis"])
def test_a_result_kept_through_a_workers_cut_is_recorded_and_nothing_runs_twice(
    database_url: str, marks: Path, broker_name: str
) -> None:
    broker = broker_url(broker_name)
    proxy = Proxy(PORTS[broker_name])
    proxied = broker.replace(f":{PORTS[broker_name]}", f":{proxy.port}")
    with cluster(database_url, broker, marks) as c:
        c.start_server()
        worker = CeleryWorker(proxied, c.env, SLOTS, c.env["BACKFILLER_CELERY_QUEUE"])
        c.workers.append(worker)
        c.start_daemon()
        worker.wait_ready()
        config = {"seconds": 1.0, "spread": 1.0}  # 1 to 3 s
        backfill = launch(c.api, "traced", "2021-01-01", "2021-01-16", runConfig=config)

        def running() -> bool:
            return int(read(c.api, backfill)["counts"]["running"]) == SLOTS

        wait_for(f"{SLOTS} runs executing", running, 60)
        cut_at = datetime.now(UTC)
        proxy.cut()
        time.sleep(CUT_SECONDS)
        back_at = datetime.now(UTC)
        proxy.restore()

        def finished() -> bool:
            return str(read(c.api, backfill)["status"]).startswith("COMPLETED")

        wait_for("the backfill to complete", finished, timeout=120, every=0.5)
        counts = read(c.api, backfill)["counts"]
    proxy.close()

    verdict = judge(database_url, marks)
    assert counts["succeeded"] == PARTITIONS == counts["total"], counts
    table = [(r.id, r.partition_key, r.attempt, r.status, r.error_message) for r in verdict.runs]
    assert verdict.doubled == {}, table  # no partition executed twice
    assert verdict.overlapping == []
    assert verdict.began_but_not_started == []
    assert len(verdict.succeeded) == PARTITIONS and set(verdict.succeeded.values()) == {1}
    # A run that ended during the cut (its end kept by the worker, delivered after it) is
    # recorded: nothing had replaced it.
    kept = [
        r
        for r in verdict.runs
        if r.status == "success" and cut_at <= r.ended_at.replace(tzinfo=UTC) <= back_at
    ]
    assert kept, [(r.id, r.status, r.ended_at) for r in verdict.runs]
