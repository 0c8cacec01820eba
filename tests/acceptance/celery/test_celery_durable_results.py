"""Runs that finish on Celery workers while no daemon is alive are recorded, not run again.

PostgreSQL, with RabbitMQ and with Redis; API, daemons and a Celery worker as real processes.
Daemon A launches six partitions of a 3 s job on a worker that runs four at once, and is
SIGKILLed while the first four execute. They finish with no daemon alive: their results wait
in A's queue, which outlives A. The other two wait on the worker for a start that A can no
longer grant. Daemon B, started after the four finished, takes A's runs over once A's lease
has expired: it records the four from A's queue (SUCCESS, at their first attempt), takes the
two back as never started, runs them, and deletes A's queue. Every partition executed exactly
once, every execution is the one run recorded SUCCESS for its partition, and the log line each
run sent with its end is recorded once (B records those of the four from A's queue too).
"""

from __future__ import annotations

import re
from collections import Counter, defaultdict
from pathlib import Path

import pytest
from sqlalchemy import create_engine, text

from tests.acceptance.celery.support import (
    broker_url,
    cluster,
    executions,
    overlaps,
    runs_in_flight,
)
from tests.acceptance.daemon_support import wait_for, wait_status

pytestmark = [pytest.mark.acceptance, pytest.mark.slow]

LEASE = ["--lease-timeout", "8"]
"""A short lease: A's runs are taken over about 8 s after its death (its workers have stopped
every run of it 1.6 s before that)."""
SLOTS = 4
RUN_SECONDS = 3.0
KEYS = [f"2023-03-0{day}" for day in range(1, 7)]


def finished(marks: Path) -> int:
    """Executions that ran to their end."""
    return sum(len(ids) for ids in executions(marks).values())


def queue_exists(broker: str, owner: str) -> bool:
    from kombu import Connection
    from kombu.exceptions import ChannelError

    from backfiller.launchers.celery.protocol import daemon_queue

    with Connection(broker, connect_timeout=2) as conn:
        try:
            conn.channel().queue_declare(queue=daemon_queue(owner), passive=True)
        except (ChannelError, *conn.channel_errors):
            return False
    return True


@pytest.mark.parametrize("broker_name", ["rabbitmq", "redis"])
def test_runs_finished_while_no_daemon_is_alive_are_recorded_from_the_dead_daemons_queue(
    database_url: str, marks: Path, broker_name: str
) -> None:
    broker = broker_url(broker_name)
    with cluster(database_url, broker, marks) as c:
        a, backfill, dead = runs_in_flight(c, KEYS, SLOTS, RUN_SECONDS, *LEASE)
        a.kill()  # SIGKILL, while its four runs are in flight
        assert finished(marks) == 0  # none had finished
        wait_for("the four to finish", lambda: finished(marks) == SLOTS, 2 * RUN_SECONDS)
        b = c.start_daemon(*LEASE)
        done = wait_status(c.api, backfill, {"COMPLETED_SUCCESS", "COMPLETED_FAILED"}, 60)
        took_over = b.output()
        gone = wait_for("A's queue to be deleted", lambda: not queue_exists(broker, dead), 10)

    assert done["status"] == "COMPLETED_SUCCESS", done
    assert done["counts"]["succeeded"] == len(KEYS) == done["counts"]["total"], done["counts"]
    # B's takeover: the four results recorded from A's queue, the two never started taken back
    # (they go back to the backfill without using a retry), none requeued as lost.
    pattern = rf"took over \d+ runs of {re.escape(dead)} .*?: (\d+) results .*?, (\d+) never"
    takeovers = re.findall(pattern, took_over)
    assert [sum(int(t[0]) for t in takeovers), sum(int(t[1]) for t in takeovers)] == [
        SLOTS,
        len(KEYS) - SLOTS,
    ], took_over
    assert gone

    engine = create_engine(database_url)
    with engine.connect() as conn:
        rows = conn.execute(
            text("SELECT id, partition_key, attempt, status, failure_reason FROM runs")
        ).all()
        logged = conn.execute(text("SELECT run_id, message FROM run_logs")).all()
    engine.dispose()
    lines_of: dict[str, list[str]] = defaultdict(list)
    for run_id, message in logged:
        lines_of[f"run_{run_id}"].append(str(message))
    runs_of: dict[str, list[tuple[str, int, str]]] = defaultdict(list)
    for run_id, key, attempt, status, _reason in rows:
        runs_of[key].append((f"run_{run_id}", int(attempt), str(status)))
    assert all(reason is None or "lost" not in str(reason).lower() for *_, reason in rows), rows
    successes = Counter(key for _, key, _, status, _ in rows if status == "success")
    assert sorted(successes) == KEYS and set(successes.values()) == {1}

    assert overlaps(marks) == []
    ran = executions(marks)
    assert sorted(ran) == KEYS
    doubled = {key: ids for key, ids in ran.items() if len(ids) != 1}
    assert doubled == {}  # 0 partitions executed twice
    assert sum(len(ids) for ids in ran.values()) == done["counts"]["succeeded"]
    for key, (run_id,) in ran.items():
        # The execution is the run recorded SUCCESS for its partition.
        assert (run_id, "success") in {(r, s) for r, _, s in runs_of[key]}, (key, runs_of[key])
    # The four that finished while no daemon was alive ran once, as their first attempt.
    finished_dead = [k for k in KEYS if runs_of[k] == [(ran[k][0], 1, "success")]]
    assert len(finished_dead) >= SLOTS, dict(runs_of)
    # Their last log line, sent with their end to the dead daemon's queue, is recorded once
    # (as is every run's: the two run by B wrote theirs through B).
    for key in KEYS:
        assert lines_of[ran[key][0]].count(f"done {key}") == 1, (key, lines_of[ran[key][0]])
