"""A timed-out or canceled run on a Celery worker leaves no process behind.

PostgreSQL, with RabbitMQ and with Redis; API, one daemon (grace 1 s) and one Celery worker as
real processes. Each run of ``parent``/``parent_times_out`` starts three children (one ignores
SIGTERM, one has a child of its own) and records their pids itself. Two runs time out and two
are canceled; in each pair one job exits on SIGTERM (its worker then waits out the grace for
the rest of its group) and one ignores it (the grace passes first: its pool process is killed
with its group). Two seconds after each run ended, none of the processes it recorded is alive.
"""

from __future__ import annotations

import time
from datetime import datetime
from pathlib import Path

import pytest

from tests.acceptance.celery.support import broker_url, cluster
from tests.acceptance.daemon_support import gql, launch, wait_for, wait_status

pytestmark = [pytest.mark.acceptance, pytest.mark.slow]

CANCEL = "mutation($id: ID!) { cancelBackfill(input: {id: $id}) { userErrors { message } } }"


def _alive(pid: int) -> bool:
    """Whether ``pid`` runs (a zombie is dead: it only waits for its parent to read it)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state not in ("Z", "X")


def _children(marks: Path, key: str) -> list[int]:
    path = marks / f"children-{key}"
    wait_for(f"the children of {key}", path.exists, timeout=60)
    return [int(line) for line in path.read_text().split()]


def _ended(run: dict[str, str]) -> float:
    return datetime.fromisoformat(run["endedAt"].replace("Z", "+00:00")).timestamp()


@pytest.mark.parametrize("name", ["rabbitmq", "redis"])
def test_timeouts_and_cancels_leave_no_child_alive(
    name: str, database_url: str, marks: Path
) -> None:
    broker = broker_url(name)
    with cluster(database_url, broker, marks) as c:
        c.start_server()
        worker = c.start_worker(concurrency=4)
        c.start_daemon()
        worker.wait_ready()
        timed = launch(
            c.api,
            "parent_times_out",
            "2024-01-01",
            "2024-01-02",
            runConfig={"stubborn": "2024-01-02"},
        )
        canceled = launch(
            c.api, "parent", "2024-01-03", "2024-01-04", runConfig={"stubborn": "2024-01-04"}
        )
        keys = ["2024-01-01", "2024-01-02", "2024-01-03", "2024-01-04"]
        children = {key: _children(marks, key) for key in keys}
        assert all(_alive(pid) for pids in children.values() for pid in pids)
        assert gql(c.api, CANCEL, {"id": canceled})["cancelBackfill"]["userErrors"] == []

        wait_status(c.api, timed, {"COMPLETED_FAILED"}, timeout=60)
        wait_status(c.api, canceled, {"CANCELED"}, timeout=60)
        runs = {run["partitionKey"]: run for b in (timed, canceled) for run in c.runs(b)}
        assert sorted(runs) == keys
        assert [runs[k]["failureReason"] for k in keys[:2]] == ["TIMEOUT", "TIMEOUT"]
        assert [runs[k]["status"] for k in keys[2:]] == ["CANCELED", "CANCELED"]
        for key in keys:
            time.sleep(max(0.0, _ended(runs[key]) + 2.0 - time.time()))
            left = [pid for pid in children[key] if _alive(pid)]
            assert left == [], f"{key}: {left} of {children[key]} alive 2 s after its run ended"
        # The pool processes whose jobs exited on SIGTERM carried on; the worker still works.
        after = launch(c.api, "noop", "2024-02-01", "2024-02-08")
        assert wait_status(c.api, after, {"COMPLETED_SUCCESS"}, timeout=60)
