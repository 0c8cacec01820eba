"""The daemon end to end: real server, daemon and worker processes, on SQLite and PostgreSQL."""

from __future__ import annotations

import contextlib
import os
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy.engine import make_url

from tests.acceptance.daemon_support import (
    DEFINITIONS,
    Daemon,
    adds_up,
    gql,
    launch,
    read,
    runs_of,
    subscribe,
    wait_for,
    wait_status,
)
from tests.operations.support import scrape, value
from tests.support import LiveServer, answers, free_port, live_server

pytestmark = pytest.mark.acceptance


server = live_server(DEFINITIONS)


@pytest.fixture
def marks(tmp_path: Path) -> Path:
    folder = tmp_path / "marks"
    folder.mkdir()
    return folder


@pytest.fixture
def metrics_port() -> int:
    return free_port()


@pytest.fixture
def daemon(database_url: str, marks: Path, metrics_port: int) -> Iterator[Daemon]:
    live = Daemon(
        database_url,
        env={"BACKFILLER_TEST_MARKS": str(marks)},
        extra=["--metrics-port", str(metrics_port)],
    )
    yield live
    live.stop()


@pytest.fixture
def metrics(daemon: Daemon, metrics_port: int) -> str:
    """The daemon's own /metrics and /healthz (``--metrics-port``), once it answers."""
    url = f"http://127.0.0.1:{metrics_port}"

    wait_for("the daemon's metrics endpoint", lambda: answers(f"{url}/healthz"), timeout=30)
    return url


def launch_passes_and_claims(metrics: str) -> tuple[float, float]:
    """How many passes the daemon's launch task has made, and how many runs it claimed."""
    text = scrape(f"{metrics}/metrics")
    passes = value(text, "backfiller_daemon_task_duration_seconds_count", task="launch")
    return passes, value(text, "backfiller_daemon_runs_total", event="claimed")


PROGRESS = """
subscription($id: ID!) {
  backfillProgress(id: $id) {
    backfillId status ended
    counts { total pending queued running succeeded failed canceled skipped }
  }
}
"""


def test_a_backfill_completes_with_exact_counts_and_live_progress(
    server: LiveServer, daemon: Daemon
) -> None:
    backfill_id = launch(server, "steady", "2024-01-01", "2024-02-29", runConfig={"seconds": 0.01})
    messages = subscribe(server, PROGRESS, {"id": backfill_id})
    progress = [m["backfillProgress"] for m in messages]
    assert len(progress) >= 2
    assert all(adds_up(p["counts"]) for p in progress)
    assert progress[-1]["ended"] is True and progress[-1]["status"] == "COMPLETED_SUCCESS"
    assert not any(p["ended"] for p in progress[:-1])
    assert progress[-1]["counts"]["succeeded"] == 60
    backfill = read(server, backfill_id)
    assert backfill["counts"] == {
        "total": 60,
        "pending": 0,
        "queued": 0,
        "running": 0,
        "succeeded": 60,
        "failed": 0,
        "canceled": 0,
        "skipped": 0,
    }
    runs = runs_of(server, backfill_id)
    assert sorted(r["partitionKey"] for r in runs) == sorted({r["partitionKey"] for r in runs})
    data = gql(
        server,
        "query($id: ID!) { run(id: $id) { status logs { nodes { level message } } } }",
        {"id": runs[0]["id"]},
    )
    assert data["run"]["logs"]["nodes"] == [
        {"level": "INFO", "message": f"processing {runs[0]['partitionKey']}"}
    ]


def test_a_failing_job_ends_completed_failed_with_its_attempts(
    server: LiveServer, daemon: Daemon
) -> None:
    backfill_id = launch(server, "broken", "2024-01-01", "2024-01-03")
    backfill = wait_status(server, backfill_id, {"COMPLETED_FAILED"})
    assert backfill["counts"]["failed"] == 3 and adds_up(backfill["counts"])
    runs = runs_of(server, backfill_id)
    attempts = Counter((r["partitionKey"], r["attempt"]) for r in runs)
    assert sorted(attempts) == [
        (day, attempt) for day in ("2024-01-01", "2024-01-02", "2024-01-03") for attempt in (1, 2)
    ]
    assert {(r["status"], r["failureReason"]) for r in runs} == {("FAILED", "ERROR")}
    assert runs[0]["errorMessage"].startswith("ValueError: cannot process")


def test_a_run_past_its_timeout_is_stopped_and_fails_with_timeout(
    server: LiveServer, daemon: Daemon
) -> None:
    backfill_id = launch(server, "hangs", "2024-01-01", "2024-01-01")
    backfill = wait_status(server, backfill_id, {"COMPLETED_FAILED"}, timeout=30)
    assert backfill["counts"]["failed"] == 1
    [run] = runs_of(server, backfill_id)
    assert (run["status"], run["failureReason"]) == ("FAILED", "TIMEOUT")
    assert run["errorMessage"] == "timed out after 1 s"


def test_pause_and_resume_while_runs_are_in_flight(
    server: LiveServer, daemon: Daemon, marks: Path, metrics: str
) -> None:
    backfill_id = launch(server, "steady", "2024-01-01", "2024-01-30", runConfig={"seconds": 0.2})
    wait_for("runs in flight", lambda: read(server, backfill_id)["counts"]["succeeded"] >= 2)
    paused = gql(
        server,
        "mutation($id: ID!) { pauseBackfill(input: {id: $id}) { backfill { status } } }",
        {"id": backfill_id},
    )
    assert paused["pauseBackfill"]["backfill"]["status"] == "PAUSED"
    settled = wait_for(
        "runs in flight to finish",
        lambda: (lambda c: c if c["queued"] == 0 and c["running"] == 0 else None)(
            read(server, backfill_id)["counts"]
        ),
    )
    # The daemon keeps trying to launch (a pass at least every 0.2 s): ten passes later it has
    # claimed nothing, and the counts have not moved.
    passes, claimed = launch_passes_and_claims(metrics)
    wait_for(
        "ten more passes of the daemon's launch task",
        lambda: launch_passes_and_claims(metrics)[0] >= passes + 10,
    )
    assert launch_passes_and_claims(metrics)[1] == claimed, "nothing is claimed while paused"
    still = read(server, backfill_id)
    assert still["status"] == "PAUSED"
    assert still["counts"] == settled, "nothing starts while paused"
    assert settled["pending"] > 0
    gql(
        server,
        "mutation($id: ID!) { resumeBackfill(input: {id: $id}) { backfill { status } } }",
        {"id": backfill_id},
    )
    done = wait_status(server, backfill_id, {"COMPLETED_SUCCESS"})
    assert done["counts"]["succeeded"] == 30
    executions = [
        line.split()[1]
        for f in marks.iterdir()
        for line in f.read_text().splitlines()
        if line.startswith("steady")
    ]
    assert sorted(executions) == sorted(set(executions)), "no partition ran twice"
    assert len(executions) == 30


def test_cancel_stops_running_runs_and_retry_relaunches_them(
    server: LiveServer, daemon: Daemon
) -> None:
    backfill_id = launch(server, "steady", "2024-01-01", "2024-01-06", runConfig={"seconds": 30})
    wait_for("runs running", lambda: read(server, backfill_id)["counts"]["running"] == 2)
    started = time.monotonic()
    canceled = gql(
        server,
        "mutation($id: ID!) { cancelBackfill(input: {id: $id}) { backfill { status } } }",
        {"id": backfill_id},
    )
    assert canceled["cancelBackfill"]["backfill"]["status"] == "CANCELING"
    backfill = wait_status(server, backfill_id, {"CANCELED"}, timeout=20)
    assert time.monotonic() - started < 15, "running runs were stopped, not waited for"
    assert backfill["counts"]["canceled"] == 6 and adds_up(backfill["counts"])
    runs = runs_of(server, backfill_id)
    assert runs and {r["status"] for r in runs} == {"CANCELED"}
    assert all(r["endedAt"] for r in runs)
    retried = gql(
        server,
        """mutation($id: ID!) { retryBackfill(input: {id: $id, include: [CANCELED, NOT_RUN]}) {
             backfill { id parent { id } counts { total } } userErrors { code message } } }""",
        {"id": backfill_id},
    )["retryBackfill"]
    assert retried["userErrors"] == []
    child = retried["backfill"]
    assert child["parent"]["id"] == backfill_id and child["counts"]["total"] == 6
    wait_for("the retry to run", lambda: read(server, child["id"])["counts"]["running"] >= 1)
    gql(
        server,
        "mutation($id: ID!) { cancelBackfill(input: {id: $id}) { backfill { status } } }",
        {"id": child["id"]},
    )
    wait_status(server, child["id"], {"CANCELED"}, timeout=20)
    kinds = [
        e["kind"]
        for e in gql(
            server,
            "query($id: ID!) { backfill(id: $id) { events { nodes { kind } } } }",
            {"id": backfill_id},
        )["backfill"]["events"]["nodes"]
    ]
    assert kinds == ["LAUNCHED", "STARTED", "CANCEL_REQUESTED", "CANCELED", "RETRIED"]


def _connected_to(pid: int, database_url: str) -> bool:
    """Whether process ``pid`` holds a connection to the database: the SQLite file open, or a
    TCP socket to PostgreSQL's port."""
    url = make_url(database_url)
    fds = Path(f"/proc/{pid}/fd")
    targets = []
    for fd in fds.iterdir():
        with contextlib.suppress(OSError):
            targets.append(os.readlink(fd))
    if url.get_backend_name() == "sqlite":
        return str(Path(url.database or "").resolve()) in targets
    sockets = {t[len("socket:[") : -1] for t in targets if t.startswith("socket:[")}
    port = f":{url.port or 5432:04X}"
    for table in ("tcp", "tcp6"):
        with contextlib.suppress(OSError):
            for line in Path(f"/proc/{pid}/net/{table}").read_text().splitlines()[1:]:
                fields = line.split()
                if fields[2].endswith(port) and fields[9] in sockets:
                    return True
    return False


def test_a_ready_daemon_has_its_workers_started_and_connected(
    daemon: Daemon, metrics: str, database_url: str, is_postgres: bool
) -> None:
    """``/readyz`` answers once every worker is ready to run at once: the worker has imported
    the storage layer and opened its start gate's connection, so the first backfill's first run
    waits for neither. Its fork server loaded the driver of that database only: beside SQLite,
    psycopg's library is not in a worker's memory."""

    wait_for("the daemon's readiness", lambda: answers(f"{metrics}/readyz", 2), timeout=60)
    workers = daemon.workers()
    assert len(workers) == 2
    for pid in workers:
        assert _connected_to(pid, database_url), f"worker {pid} has no database connection"
        mapped = Path(f"/proc/{pid}/maps").read_text()
        assert ("psycopg_binary" in mapped) == is_postgres, f"worker {pid}: psycopg loaded"
