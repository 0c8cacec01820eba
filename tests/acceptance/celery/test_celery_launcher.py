"""The Celery launcher end to end: API, daemon and Celery workers as real processes.

PostgreSQL only (the deployment the Celery launcher is for), with RabbitMQ and with Redis.
"""

from __future__ import annotations

import os
import re
import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.acceptance.celery.support import (
    Cluster,
    broker_url,
    cluster,
    executions,
    kill_quietly,
    overlaps,
)
from tests.acceptance.daemon_support import adds_up, gql, launch, wait_for, wait_status
from tests.conftest import _empty_postgres

pytestmark = [pytest.mark.acceptance, pytest.mark.slow]

CANCEL = "mutation($id: ID!) { cancelBackfill(input: {id: $id}) { userErrors { message } } }"


@pytest.fixture(scope="module", params=["rabbitmq", "redis"])
def broker(request: pytest.FixtureRequest, pg_template_url: str | None) -> str:
    if pg_template_url is None:
        pytest.skip("the Celery launcher's tests run on PostgreSQL")
    return broker_url(str(request.param))


@pytest.fixture(scope="module")
def marks(broker: str, tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("marks")


@pytest.fixture(scope="module")
def celery_cluster(pg_template_url: str, broker: str, marks: Path) -> Iterator[Cluster]:
    """One cluster for the module's tests (each test uses partitions of its own)."""
    _empty_postgres(pg_template_url)
    with cluster(pg_template_url, broker, marks) as made:
        made.start_server()
        made.start_daemon()
        made.start_worker()
        made.start_worker(gpu=True)
        for worker in made.workers:
            worker.wait_ready()
        yield made


def test_a_backfill_runs_on_celery_workers_with_exact_counts(
    celery_cluster: Cluster, marks: Path
) -> None:
    c = celery_cluster
    plain = launch(c.api, "recorded", "2024-01-01", "2024-02-19")
    heavy = launch(c.api, "on_gpu", "2024-01-01", "2024-01-05")
    done = wait_status(c.api, plain, {"COMPLETED_SUCCESS", "COMPLETED_FAILED"}, timeout=90)
    assert done["counts"]["succeeded"] == 50 == done["counts"]["total"]
    assert adds_up(done["counts"])
    assert wait_status(c.api, heavy, {"COMPLETED_SUCCESS"}, timeout=60)["counts"]["succeeded"] == 5

    runs = c.runs(plain)
    assert len(runs) == 50, [(r["attempt"], r["status"], r["errorMessage"]) for r in runs]
    assert {r["status"] for r in runs} == {"SUCCESS"}
    pools = {pid for w in c.workers for pid in w.pool()}
    daemon_pid = c.daemons[0].proc.pid
    for run in runs:
        assert run["worker"]["host"] == socket.gethostname()
        assert run["worker"]["pid"] in pools and run["worker"]["pid"] != daemon_pid
        key = run["partitionKey"]
        assert [line["message"] for line in run["logs"]["nodes"]] == [
            f"running {key}",
            f"done {key}",
        ]
    assert len({r["worker"]["pid"] for r in runs}) > 1  # spread over the workers
    ran = executions(marks)
    assert sorted(ran) == sorted(r["partitionKey"] for r in runs)
    assert all(ids == [r["id"]] for r in runs for ids in [ran[r["partitionKey"]]])
    assert overlaps(marks) == []

    gpu_pool = set(c.workers[1].pool())
    for run in c.runs(heavy):
        assert run["worker"]["pid"] in gpu_pool  # the job's queue: only the gpu worker has it


def test_a_killed_worker_s_run_ends_worker_lost_and_runs_again_elsewhere(
    celery_cluster: Cluster, marks: Path, broker: str
) -> None:
    c = celery_cluster
    backfill = launch(c.api, "sleepy", "2024-03-01", "2024-03-01")
    pid_file = marks / "pid-2024-03-01-1"
    wait_for("the run to start", pid_file.exists, timeout=60)
    pid = int(wait_for("its pid", pid_file.read_text))
    holder = next(w for w in c.workers if pid in w.pool())
    other = next(w for w in c.workers if w is not holder)
    holder.kill()

    done = wait_status(c.api, backfill, {"COMPLETED_SUCCESS", "COMPLETED_FAILED"}, timeout=60)
    assert done["status"] == "COMPLETED_SUCCESS"
    first, second = sorted(c.runs(backfill), key=lambda r: r["attempt"])
    assert (first["status"], first["failureReason"]) == ("FAILED", "WORKER_LOST")
    assert first["worker"]["pid"] == pid
    assert second["status"] == "SUCCESS" and second["worker"]["pid"] in other.pool()
    assert not (marks / "done-2024-03-01-1").exists()  # attempt 1 never ran to its end
    if broker.startswith("amqp"):
        # RabbitMQ gave the dead worker's unacknowledged task to the other worker: a second
        # delivery of attempt 1, which its daemon refused.
        run_id = first["id"].removeprefix("run_")
        wait_for(
            "the duplicate delivery's refusal",
            lambda: f"run-{run_id}-1] succeeded" in other.output() and "refused" in other.output(),
            timeout=30,
        )


def _stalled(c: Cluster, marks: Path, month: str, stubborn: bool = False) -> tuple[str, list[str]]:
    """A backfill of 16 runs of the short job ``stalls`` that travel 8 to a task, whose 12th
    stalls: the backfill's id and keys, once the 12th is executing."""
    # A first backfill shows the daemon that the job's runs are short.
    learnt = launch(c.api, "stalls", f"{month}-20", f"{month}-23")
    assert wait_status(c.api, learnt, {"COMPLETED_SUCCESS"}, timeout=60)
    keys = [f"{month}-{day:02d}" for day in range(1, 17)]
    config = {"stall": keys[11], "stubborn": stubborn}
    backfill = launch(c.api, "stalls", keys[0], keys[-1], runConfig=config)
    wait_for("the stalled run to start", (marks / f"stall-{keys[11]}").exists, timeout=60)
    return backfill, keys


def _only_the_stalled_run_failed(
    c: Cluster, marks: Path, backfill: str, keys: list[str], reason: str
) -> dict[str, Any]:
    done = wait_status(c.api, backfill, {"COMPLETED_SUCCESS", "COMPLETED_FAILED"}, timeout=90)
    assert (done["counts"]["succeeded"], done["counts"]["failed"]) == (15, 1)
    runs = c.runs(backfill)
    lost = [r for r in runs if r["status"] == "FAILED"]
    assert [(r["partitionKey"], r["failureReason"]) for r in lost] == [(keys[11], reason)]
    others = [key for key in keys if key != keys[11]]
    assert sorted(r["partitionKey"] for r in runs if r["status"] == "SUCCESS") == others
    ran = executions(marks)
    assert keys[11] not in ran and all(len(ran[key]) == 1 for key in others)  # once each
    # Celery's own log names the tasks: several carried 8 runs (the first and 7 more).
    logs = "".join(w.output() for w in c.workers if w.proc.poll() is None)
    assert re.search(r"backfiller\.run\[run-\d+-1\+7\] received", logs), logs[-3000:]
    return lost[0]


def test_short_runs_share_tasks_and_a_killed_run_s_task_mates_run_again(
    celery_cluster: Cluster, marks: Path
) -> None:
    # The 12th run's pool process is SIGKILLed: the 4 runs after it in its task never asked to
    # start, and nothing published after them (no retry) would show them overtaken: the daemon
    # publishes them again.
    c = celery_cluster
    backfill, keys = _stalled(c, marks, "2024-06")
    pid = int(wait_for("its pid", (marks / f"stall-{keys[11]}").read_text))
    kill_quietly(pid)
    lost = _only_the_stalled_run_failed(c, marks, backfill, keys, "WORKER_LOST")
    assert lost["worker"]["pid"] == pid


def test_a_run_killed_at_its_timeout_has_its_task_mates_run_again(
    celery_cluster: Cluster, marks: Path
) -> None:
    # The 12th run ignores SIGTERM: at its 5 s timeout, then the grace period, its worker
    # sends its end and kills its process, with the 4 runs after it in its task.
    c = celery_cluster
    backfill, keys = _stalled(c, marks, "2024-07", stubborn=True)
    _only_the_stalled_run_failed(c, marks, backfill, keys, "TIMEOUT")


def test_cancel_and_timeout_stop_runs_on_their_worker(celery_cluster: Cluster, marks: Path) -> None:
    c = celery_cluster
    slow = launch(c.api, "too_slow", "2024-04-01", "2024-04-01")
    sleeper = launch(c.api, "sleepy", "2024-04-02", "2024-04-02")
    wait_for("the run to start", (marks / "pid-2024-04-02-1").exists, timeout=60)
    answer = gql(c.api, CANCEL, {"id": sleeper})
    assert answer["cancelBackfill"]["userErrors"] == []

    canceled = wait_status(c.api, sleeper, {"CANCELED"}, timeout=30)
    assert canceled["counts"]["canceled"] == 1
    (run,) = c.runs(sleeper)
    assert run["status"] == "CANCELED"
    assert not (marks / "done-2024-04-02-1").exists()

    failed = wait_status(c.api, slow, {"COMPLETED_FAILED"}, timeout=30)
    assert failed["counts"]["failed"] == 1
    (run,) = c.runs(slow)
    assert (run["status"], run["failureReason"]) == ("FAILED", "TIMEOUT")
    assert run["errorMessage"] == "timed out after 1 s"
    assert "starting a long sleep" in [line["message"] for line in run["logs"]["nodes"]]
    assert os.path.isdir(marks)
