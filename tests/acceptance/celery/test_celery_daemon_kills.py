"""Daemons SIGKILLed during a backfill on Celery, on RabbitMQ and on Redis (issue 31).

Two daemons and two Celery workers (PostgreSQL); a daemon is killed at any instant, several
times, and another started. A worker's end stays on the broker until the daemon that reads it
has written it (Redis too: acknowledged after the write), so the daemon taking the dead one's
runs over records it: no run that ended is executed again, none that executed is taken for
never started, and every run recorded ``SUCCESS`` shows when it started. Judged by the job's
own marks (``faults.py``).
"""

from __future__ import annotations

import random
import time
from pathlib import Path

import pytest

from tests.acceptance.celery.faults import judge
from tests.acceptance.celery.support import broker_url, cluster
from tests.acceptance.daemon_support import launch, read, wait_for

pytestmark = [pytest.mark.acceptance, pytest.mark.slow]

PARTITIONS = 240  # 2021-01-01 .. 2021-08-28
KILLS = 2
LEASE = ("--lease-timeout", "8")
"""Short leases: a dead daemon's runs are taken over 8 s after its last renewal."""


@pytest.mark.parametrize("broker_name", ["rabbitmq", "redis"])
def test_killing_daemons_executes_no_partition_twice(
    database_url: str, marks: Path, broker_name: str
) -> None:
    broker = broker_url(broker_name)
    chance = random.Random(31)
    with cluster(database_url, broker, marks, heartbeat_timeout=6) as c:
        c.start_server()
        for _ in range(2):
            c.start_daemon(*LEASE)
        for _ in range(2):
            c.start_worker(concurrency=3)
        for worker in c.workers:
            worker.wait_ready()
        backfill = launch(c.api, "traced", "2021-01-01", "2021-08-28", runConfig={"seconds": 0.1})

        def succeeded() -> int:
            return int(read(c.api, backfill)["counts"]["succeeded"])

        for kill in range(KILLS):
            goal = PARTITIONS * (kill + 1) / (KILLS + 2)
            wait_for(f"{goal:.0f} done", lambda: succeeded() >= goal, 120)  # noqa: B023
            # At any instant: results in flight, written or not.
            time.sleep(chance.uniform(0.0, 0.5))
            chance.choice([d for d in c.daemons if d.proc.poll() is None]).kill()
            c.start_daemon(*LEASE)

        def finished() -> bool:
            return str(read(c.api, backfill)["status"]).startswith("COMPLETED")

        wait_for("the backfill to complete", finished, timeout=120, every=0.5)
        counts = read(c.api, backfill)["counts"]

    verdict = judge(database_url, marks)
    assert counts["succeeded"] == PARTITIONS == counts["total"], counts
    doubled = set(verdict.doubled)
    table = [(r.id, r.partition_key, r.attempt, r.status, r.error_message) for r in verdict.runs]
    assert verdict.doubled == {}, [r for r in table if r[1] in doubled]  # none executed twice
    assert verdict.overlapping == []
    assert verdict.began_but_not_started == [], table
    assert verdict.executed_without_start == [], table
    assert len(verdict.succeeded) == PARTITIONS and set(verdict.succeeded.values()) == {1}
