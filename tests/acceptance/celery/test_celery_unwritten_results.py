"""A daemon that dies holding results it received but had not written loses none of them.

PostgreSQL, RabbitMQ and Redis; API, daemons and a Celery worker as real processes. Daemon A
launches four partitions of a 2 s job. While they execute, another session locks the ``runs`` table
against writes, so A can receive the workers' ends but not write them. Once the four finished
and A has taken their ends off its queue, A is SIGKILLed and the lock released. Daemon B
takes A's runs over: it must find the four ends back in A's queue (A acknowledged none, so the
broker gave them back when A's connection died) and record them SUCCESS at their first
attempt. Had A taken them as received, B would find nothing, end the four ``WORKER_LOST`` and
run them again: each partition would execute twice (as on Redis before issue 31: there the
daemon now acknowledges after the write too, and B puts back what A held unacknowledged).
"""

from __future__ import annotations

import re
import time
from collections import Counter
from pathlib import Path

import pytest
from sqlalchemy import create_engine, text

from backfiller.launchers.celery.protocol import daemon_queue
from tests.acceptance.celery.support import (
    broker_url,
    cluster,
    executions,
    overlaps,
    runs_in_flight,
)
from tests.acceptance.celery.test_celery_durable_results import LEASE, finished
from tests.acceptance.daemon_support import wait_for, wait_status

pytestmark = [pytest.mark.acceptance, pytest.mark.slow]

SLOTS = 4
RUN_SECONDS = 2.0
KEYS = [f"2023-04-0{day}" for day in range(1, SLOTS + 1)]


def ready_messages(broker: str, owner: str) -> int:
    """Messages waiting in ``owner``'s queue, not delivered to a consumer."""
    from kombu import Connection

    with Connection(broker, connect_timeout=2) as conn:
        try:
            declared = conn.channel().queue_declare(queue=daemon_queue(owner), passive=True)
        except conn.channel_errors:
            return 0  # Redis: an empty queue does not exist
    return int(declared.message_count)


@pytest.mark.parametrize("broker_name", ["rabbitmq", "redis"])
def test_results_received_but_not_written_by_a_daemon_that_dies_are_recorded_by_its_takeover(
    database_url: str, marks: Path, broker_name: str
) -> None:
    broker = broker_url(broker_name)
    engine = create_engine(database_url)
    with cluster(database_url, broker, marks) as c:
        a, backfill, dead = runs_in_flight(c, KEYS, SLOTS, RUN_SECONDS, *LEASE)
        with engine.connect() as blocker:
            # Reads go on (ACCESS SHARE); A's writes of the runs wait for this transaction.
            blocker.execute(text("LOCK TABLE runs IN EXCLUSIVE MODE"))
            wait_for("the four to finish", lambda: finished(marks) == SLOTS, 2 * RUN_SECONDS + 30)
            time.sleep(1.0)  # A's launcher reads its queue every 20 ms
            assert ready_messages(broker, dead) == 0, "A has taken the ends off its queue"
            unwritten = blocker.execute(
                text("SELECT count(*) FROM runs WHERE status = 'running'")
            ).scalar_one()
            assert unwritten == SLOTS, "A has written none of them"
            a.kill()  # SIGKILL, holding four results it could not write
            blocker.rollback()
        b = c.start_daemon(*LEASE)
        done = wait_status(c.api, backfill, {"COMPLETED_SUCCESS", "COMPLETED_FAILED"}, 90)
        took_over = b.output()

    with engine.connect() as conn:
        rows = conn.execute(text("SELECT partition_key, attempt, status FROM runs")).all()
    engine.dispose()
    assert done["status"] == "COMPLETED_SUCCESS", done
    assert done["counts"]["succeeded"] == SLOTS == done["counts"]["total"], done["counts"]
    pattern = rf"took over \d+ runs of {re.escape(dead)} .*?: (\d+) results"
    assert sum(int(n) for n in re.findall(pattern, took_over)) == SLOTS, took_over
    # One run per partition, at its first attempt: nothing was run again.
    assert sorted((key, attempt, status) for key, attempt, status in rows) == [
        (key, 1, "success") for key in KEYS
    ]
    assert overlaps(marks) == []
    ran = executions(marks)
    assert Counter({key: len(ids) for key, ids in ran.items()}) == Counter(dict.fromkeys(KEYS, 1))
