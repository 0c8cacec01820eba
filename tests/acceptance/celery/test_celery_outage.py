"""A 30 s broker outage in the middle of a backfill on Celery: nothing lost, nothing doubled.

The daemon and the Celery workers reach RabbitMQ through a TCP proxy the test controls; cutting
it breaks every connection and refuses new ones. Tasks taken but not acknowledged come back
from RabbitMQ when their worker's connection breaks, and are refused when they ask to start
again; results finished during the outage wait on their worker until the broker is back.
"""

from __future__ import annotations

import time
from collections import Counter
from pathlib import Path

import pytest
from sqlalchemy import create_engine, text

from tests.acceptance.celery.support import broker_url, cluster, executions, overlaps
from tests.acceptance.daemon_support import Proxy, launch, read, wait_for

pytestmark = [pytest.mark.acceptance, pytest.mark.slow]

OUTAGE_SECONDS = 30
PARTITIONS = 200


def test_a_broker_outage_loses_and_doubles_nothing(database_url: str, marks: Path) -> None:
    broker_url("rabbitmq")
    proxy = Proxy(5672)
    broker = f"amqp://guest:guest@127.0.0.1:{proxy.port}//"
    # Runs ride out an outage shorter than half the heartbeat timeout.
    with cluster(database_url, broker, marks, heartbeat_timeout=2.5 * OUTAGE_SECONDS) as c:
        c.start_server()
        c.start_daemon()
        for _ in range(2):
            c.start_worker()
        for worker in c.workers:
            worker.wait_ready()
        backfill = launch(
            c.api, "recorded", "2021-01-01", "2021-07-19", runConfig={"seconds": 0.05}
        )
        wait_for("a third done", lambda: read(c.api, backfill)["counts"]["succeeded"] > 60, 120)
        proxy.cut()
        time.sleep(OUTAGE_SECONDS)
        proxy.restore()

        def finished() -> bool:
            return str(read(c.api, backfill)["status"]).startswith("COMPLETED")

        wait_for("the backfill to complete", finished, timeout=180, every=0.5)
        counts = read(c.api, backfill)["counts"]
    proxy.close()

    assert counts["succeeded"] == PARTITIONS == counts["total"], counts
    engine = create_engine(database_url)
    with engine.connect() as conn:
        rows = conn.execute(text("SELECT id, partition_key, status FROM runs")).all()
    engine.dispose()
    successes = Counter(key for _, key, status in rows if status == "success")
    assert len(successes) == PARTITIONS and set(successes.values()) == {1}
    assert overlaps(marks) == []
    ran = executions(marks)
    assert sorted(ran) == sorted(successes)
    doubled = {key: ids for key, ids in ran.items() if len(ids) != 1}
    assert doubled == {}  # every partition executed to its end exactly once
