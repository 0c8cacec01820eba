"""Chaos on Celery: SIGKILL of Celery workers and of daemons during a 1,500-partition backfill.

Two daemons and three Celery workers (RabbitMQ, or Redis with
``BACKFILLER_TEST_CHAOS_BROKER=redis``; PostgreSQL). The job holds an exclusive lock on
its partition's file while it runs and appends one line per execution that ran to its end.
Afterwards: every partition succeeded exactly once, no two executions of a partition overlapped,
and every execution recorded by the job is a run in the database (no attempt ran twice). The
job's runs are short, so most travel several to a Celery task.
"""

from __future__ import annotations

import os
import random
import re
from collections import Counter, defaultdict
from pathlib import Path

import pytest
from sqlalchemy import create_engine, text

from tests.acceptance.celery.support import broker_url, cluster, executions, overlaps
from tests.acceptance.daemon_support import launch, read, wait_for

pytestmark = [pytest.mark.acceptance, pytest.mark.slow]

PARTITIONS = 1_500


def test_killing_workers_and_daemons_loses_and_doubles_nothing(
    database_url: str, marks: Path
) -> None:
    # RabbitMQ in CI; BACKFILLER_TEST_CHAOS_BROKER=redis runs it on Redis.
    broker = broker_url(os.environ.get("BACKFILLER_TEST_CHAOS_BROKER", "rabbitmq"))
    chance = random.Random(14)
    with cluster(database_url, broker, marks) as c:
        c.start_server()
        for _ in range(2):
            c.start_daemon()
        for _ in range(3):
            c.start_worker(concurrency=3)
        for worker in c.workers:
            worker.wait_ready()
        backfill = launch(c.api, "recorded", "2020-01-01", "2024-02-08")  # 1,500 days

        def succeeded() -> int:
            return int(read(c.api, backfill)["counts"]["succeeded"])

        kills = 0
        for share, victim in ((0.15, "worker"), (0.35, "daemon"), (0.55, "worker")):
            goal = PARTITIONS * share
            wait_for(f"{share:.0%} done", lambda: succeeded() >= goal, 240)  # noqa: B023
            if victim == "worker":
                chance.choice([w for w in c.workers if w.proc.poll() is None]).kill()
                c.start_worker(concurrency=3)
            else:
                chance.choice([d for d in c.daemons if d.proc.poll() is None]).kill()
                c.start_daemon()
            kills += 1

        def finished() -> bool:
            return str(read(c.api, backfill)["status"]).startswith("COMPLETED")

        wait_for("the backfill to complete", finished, timeout=300, every=0.5)
        counts = read(c.api, backfill)["counts"]
        # The job's runs are short, so they went several to a task (Celery's log names such a
        # task run-<id>-<attempt>+<more>): the kills hit tasks of several runs too.
        logs = "".join(w.output() for w in c.workers if w.proc.poll() is None)
        assert re.search(r"backfiller\.run\[run-\d+-\d+\+\d+\] received", logs)

    assert kills == 3
    assert counts["succeeded"] == PARTITIONS == counts["total"], counts
    engine = create_engine(database_url)
    with engine.connect() as conn:
        rows = conn.execute(text("SELECT id, partition_key, status FROM runs")).all()
    engine.dispose()
    runs_of: dict[str, set[str]] = defaultdict(set)
    for run_id, key, _status in rows:
        runs_of[key].add(f"run_{run_id}")
    successes = Counter(key for _, key, status in rows if status == "success")
    assert len(successes) == PARTITIONS and set(successes.values()) == {1}

    assert overlaps(marks) == []
    ran = executions(marks)
    assert len(ran) == PARTITIONS
    for key, run_ids in ran.items():
        assert len(run_ids) == len(set(run_ids)), (key, run_ids)  # no attempt ran twice
        assert set(run_ids) <= runs_of[key], (key, run_ids)  # every execution is a run
