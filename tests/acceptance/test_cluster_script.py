"""``scripts/cluster.sh`` (``make cluster``): ready means answering, and Ctrl+C exits 0.

The script runs as a user runs it, in a process group of its own, with free ports, a database
and queue names of its own, against the machine's PostgreSQL and broker. "cluster up" must
mean that both APIs answer and a backfill completes; SIGINT to the group (what Ctrl+C sends)
must end it with the one line "stopped", exit 0, and no process of the cluster left.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest
from sqlalchemy import create_engine, text
from sqlalchemy.engine import make_url

from tests.acceptance.celery.support import broker_url
from tests.acceptance.daemon_support import children_of
from tests.support import LAUNCH, REPO, free_port

SCRIPT = REPO / "scripts" / "cluster.sh"
# Every process of the cluster starts at once; on a busy machine that takes a while.
UP_SECONDS = 240

READ = """
query($id: ID!) {
  backfill(id: $id) { status counts { total succeeded failed canceled } }
}
"""


def descendants(pid: int) -> set[int]:
    found: set[int] = set()
    todo = [pid]
    while todo:
        for child in children_of(todo.pop()):
            if child not in found:
                found.add(child)
                todo.append(child)
    return found


def processes_of(env: dict[str, str]) -> list[int]:
    """Pids of the processes (of any group) started with this cluster's queue name."""
    mark = f"BACKFILLER_CELERY_QUEUE={env['BACKFILLER_CELERY_QUEUE']}".encode()
    found = []
    for environ in Path("/proc").glob("[0-9]*/environ"):
        with suppress(OSError):
            if mark in environ.read_bytes().split(b"\0") and alive(int(environ.parent.name)):
                found.append(int(environ.parent.name))
    return found


def alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state != "Z"


# The script as a terminal starts it: with SIGINT at its default. A process started in the
# background by a non-interactive shell (as a CI job may start the suite) inherits SIGINT
# ignored, and bash cannot trap a signal ignored when it starts, so Ctrl+C would not reach it.
AS_FROM_A_TERMINAL = (
    "import os, signal, sys; signal.signal(signal.SIGINT, signal.SIG_DFL); "
    "os.execv(sys.argv[1], sys.argv[1:])"
)


@dataclass
class ClusterScript:
    """``scripts/cluster.sh`` in a session (and process group) of its own; its stderr lines."""

    env: dict[str, str]
    proc: subprocess.Popen[str] = field(init=False)
    reader: threading.Thread = field(init=False)
    lines: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-c", AS_FROM_A_TERMINAL, str(SCRIPT)],
            env={**os.environ, **self.env},
            cwd=REPO,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
            start_new_session=True,
        )
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self) -> None:
        assert self.proc.stderr is not None
        with self.proc.stderr as lines:
            for line in lines:
                self.lines.append(line.rstrip("\n"))

    def wait_line(self, prefix: str, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if any(line.startswith(prefix) for line in self.lines):
                return
            if not self.reader.is_alive():  # the script has closed its stderr: it ended
                break
            time.sleep(0.2)
        raise AssertionError(f"no line {prefix!r}; the script said: {self.lines}")

    def finish(self, timeout: float) -> int:
        code = self.proc.wait(timeout)
        self.reader.join(10)
        return code

    def kill(self) -> None:
        """Whatever is left, at the end of a failed test: the group and every descendant."""
        left = descendants(self.proc.pid)
        with suppress(ProcessLookupError):
            os.killpg(self.proc.pid, signal.SIGKILL)
        for pid in left:
            with suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        with suppress(subprocess.TimeoutExpired):
            self.proc.wait(10)


@pytest.fixture
def cluster_database(pg_template_url: str | None) -> Iterator[str]:
    """A database name of this test's own on the test PostgreSQL: the script creates it."""
    if pg_template_url is None:
        pytest.skip("the cluster runs on PostgreSQL")
    url = make_url(pg_template_url).set(database=f"bf_cluster_{uuid.uuid4().hex[:10]}")
    yield url.render_as_string(hide_password=False)
    admin = create_engine(url.set(database="postgres"), isolation_level="AUTOCOMMIT")
    with admin.connect() as conn:
        conn.execute(text(f'DROP DATABASE IF EXISTS "{url.database}" WITH (FORCE)'))
    admin.dispose()


def script_env(database: str, broker: str, logs: Path, apis: int, daemons: int) -> dict[str, str]:
    tag = uuid.uuid4().hex[:8]
    return {
        "BIN": str(Path(sys.executable).parent),
        "DATABASE_URL": database,
        "BROKER": broker,
        "API_PORTS": " ".join(str(free_port()) for _ in range(apis)),
        "DAEMON_PORTS": " ".join(str(free_port()) for _ in range(daemons)),
        "WORKER_METRICS_PORT": "",  # fixed ports could clash with another session's
        "LOG_DIR": str(logs),
        "READY_TIMEOUT": str(UP_SECONDS - 30),
        "BACKFILLER_CELERY_QUEUE": f"test-cluster-{tag}",
        # The example trigger launches only once an export has landed: none lands here.
        "BACKFILLER_EXAMPLE_LANDING_DIR": str(logs / "landing"),
        "PYTHONPATH": str(REPO),
    }


@contextmanager
def running(env: dict[str, str]) -> Iterator[ClusterScript]:
    script = ClusterScript(env)
    try:
        yield script
    finally:
        if script.proc.poll() is None or descendants(script.proc.pid):
            script.kill()


def gql(port: str, query: str, variables: dict[str, Any]) -> Any:
    answer = httpx.post(
        f"http://127.0.0.1:{port}/graphql/v1",
        json={"query": query, "variables": variables},
        timeout=30,
    )
    assert answer.status_code == 200, answer.text
    body = answer.json()
    assert "errors" not in body, body
    return body["data"]


def backfill_completes(launch_port: str, read_port: str) -> None:
    """Five days of the example's daily_sales, launched through one API, read through another."""
    target = {"job": "daily_sales"}
    partitions = {"range": {"start": "2024-03-01", "end": "2024-03-05"}}
    launched = gql(launch_port, LAUNCH, {"input": {"target": target, "partitions": partitions}})
    assert launched["launchBackfill"]["userErrors"] == []
    backfill_id = launched["launchBackfill"]["backfill"]["id"]
    deadline = time.monotonic() + 120
    while (found := gql(read_port, READ, {"id": backfill_id})["backfill"])["status"] not in (
        "COMPLETED_SUCCESS",
        "COMPLETED_FAILED",
        "FAILED",
    ):
        assert time.monotonic() < deadline, found
        time.sleep(0.5)
    assert found == {
        "status": "COMPLETED_SUCCESS",
        "counts": {"total": 5, "succeeded": 5, "failed": 0, "canceled": 0},
    }


@pytest.mark.slow
@pytest.mark.parametrize(
    ("broker", "apis", "daemons"),
    [("rabbitmq", 2, 2), ("redis", 1, 1)],
    ids=["rabbitmq-default-topology", "redis-small"],
)
def test_up_means_answering_and_ctrl_c_stops_it_all(
    cluster_database: str, tmp_path: Path, broker: str, apis: int, daemons: int
) -> None:
    broker_url(broker)  # skips when that broker is not running here
    env = script_env(cluster_database, broker, tmp_path / "logs", apis, daemons)
    if broker == "redis":
        env["WORKERS"] = "1"
    with running(env) as script:
        script.wait_line("cluster up", UP_SECONDS)
        ports = env["API_PORTS"].split()
        for port in ports:  # up means answering, at once
            assert httpx.get(f"http://127.0.0.1:{port}/readyz", timeout=5).status_code == 200
        backfill_completes(ports[0], ports[-1])
        key = tmp_path / "logs" / "broker-key"
        assert key.stat().st_mode & 0o077 == 0 and len(key.read_text().strip()) == 64

        cluster = descendants(script.proc.pid)  # the pool processes too (their own groups)
        said = len(script.lines)
        os.killpg(script.proc.pid, signal.SIGINT)  # what Ctrl+C in a terminal does
        assert script.finish(90) == 0, script.lines
        assert script.lines[said:] == ["stopped"]
        left = [pid for pid in cluster if alive(pid)]
        assert left == [], f"processes of the cluster left running: {left}"
        assert processes_of(env) == []


@pytest.mark.parametrize("wait", ["exits", "times out"])
def test_a_process_that_does_not_come_up_is_named_with_its_log(
    cluster_database: str, tmp_path: Path, wait: str
) -> None:
    broker_url("rabbitmq")
    logs = tmp_path / "logs"
    env = script_env(cluster_database, "rabbitmq", logs, apis=1, daemons=0)
    env["WORKERS"] = "1" if wait == "times out" else "0"
    port = env["API_PORTS"]
    with socket.socket() as taken:
        if wait == "exits":  # the API cannot bind its port: it exits at once
            taken.bind(("127.0.0.1", int(port)))
            taken.listen()
        else:  # no worker can be ready at once (a Celery worker takes seconds to start)
            env["READY_TIMEOUT"] = "0"
        with running(env) as script:
            code = script.finish(UP_SECONDS)
    said = "\n".join(script.lines)
    assert code == 1, said
    if wait == "exits":
        assert f"error: the API on port {port} exited (status " in said
        assert f"before the cluster was up; stopping the rest. Its log, {logs}/api-{port}" in said
    else:
        assert "error: not ready after 0 s:" in said
        assert "  worker cluster-" in said  # named by its Celery node name
        assert f"(log: {logs}/worker-1.log)" in said
    assert "cluster up" not in said and "stopped" not in said
    assert processes_of(env) == []


def test_make_cluster_needs_no_node() -> None:
    """The recipes of the target and of all it depends on (dry run, as if all were out of
    date): Python only, no npm and no TypeScript client."""
    plan = subprocess.run(
        ["make", "-n", "-B", "cluster"], cwd=REPO, capture_output=True, text=True, check=True
    ).stdout
    assert "scripts/cluster.sh" in plan
    assert "npm" not in plan and "node_modules" not in plan
