"""Real processes for the Celery launcher's tests: API, daemons and Celery workers.

Each test gets queue names of its own (``$BACKFILLER_CELERY_QUEUE``, and the ``gpu`` queue of
the test definitions), so test sessions running side by side on one broker never take each
other's runs. The brokers are the machine's RabbitMQ and Redis on loopback.
"""

from __future__ import annotations

import os
import re
import secrets
import signal
import socket
import uuid
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from tests.acceptance.daemon_support import children_of, gql, launch, read, wait_for
from tests.support import LiveProcess, LiveServer

DEFINITIONS = "tests.acceptance.celery.defs:definitions"
BROKERS = {
    "rabbitmq": "amqp://guest:guest@127.0.0.1:5672//",
    "redis": "redis://127.0.0.1:6379/0",
}

RUNS = """
query($id: ID!, $after: String) {
  backfill(id: $id) {
    runs(first: 100, after: $after) {
      pageInfo { hasNextPage endCursor }
      nodes {
        id partitionKey attempt status failureReason errorMessage startedAt endedAt
        worker { host pid }
        logs(first: 20) { nodes { message } }
      }
    }
  }
}
"""


def broker_reachable(url: str) -> bool:
    port = 5672 if url.startswith("amqp") else 6379
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=1):
            return True
    except OSError:
        return False


def broker_url(name: str) -> str:
    url = BROKERS[name]
    if not broker_reachable(url):
        pytest.skip(f"{name} is not running on 127.0.0.1")
    return url


def kill_quietly(pid: int) -> None:
    with suppress(ProcessLookupError):
        os.kill(pid, signal.SIGKILL)


class PatientServer(LiveServer):
    """A server given longer to start: a cluster's processes all start at once."""

    def wait_ready(self, timeout: float = 120) -> None:
        super().wait_ready(timeout)


class CeleryWorker(LiveProcess):
    """``backfiller worker``: Celery's worker, in a process of its own."""

    def __init__(
        self,
        broker: str,
        env: dict[str, str],
        concurrency: int = 2,
        queues: str = "",
        extra: tuple[str, ...] = (),
    ) -> None:
        args = ["worker", "--definitions", DEFINITIONS]
        args += ["--concurrency", str(concurrency), "--loglevel", "INFO", *extra]
        if queues:
            args += ["--queues", queues]
        # The broker's URL (its password) through the environment, never the command line.
        super().__init__(args, env={**env, "BACKFILLER_BROKER_URL": broker})

    def pool(self) -> list[int]:
        """Pids of its pool processes (where runs execute)."""
        return children_of(self.proc.pid)

    def wait_ready(self) -> None:
        try:
            wait_for("the worker", lambda: "ready." in self.output(), timeout=120, every=0.2)
        except AssertionError:
            raise AssertionError(f"the Celery worker is not ready:\n{self.output()}") from None

    def kill(self) -> None:
        """SIGKILL the worker and its pool processes at once, like a machine that died."""
        pool = self.pool()
        kill_quietly(self.proc.pid)
        for pid in pool:
            kill_quietly(pid)
        self.proc.wait(10)
        self.stop()


class CeleryDaemon(LiveProcess):
    def __init__(
        self, database_url: str, broker: str, env: dict[str, str], extra: list[str]
    ) -> None:
        args = ["daemon", "--database", database_url, "--definitions", DEFINITIONS]
        args += ["--launcher", "celery", "--grace-seconds", "1"]
        super().__init__(args + extra, env={**env, "BACKFILLER_BROKER_URL": broker})

    def kill(self) -> None:
        kill_quietly(self.proc.pid)
        self.proc.wait(10)
        self.stop()


@dataclass
class Cluster:
    """API server, daemons and Celery workers sharing one database and one broker."""

    database_url: str
    broker: str
    marks: Path
    heartbeat_timeout: float = 10.0
    env: dict[str, str] = field(default_factory=dict)
    server: LiveServer | None = None
    daemons: list[CeleryDaemon] = field(default_factory=list)
    workers: list[CeleryWorker] = field(default_factory=list)

    def __post_init__(self) -> None:
        tag = uuid.uuid4().hex[:8]
        self.env = {
            "BACKFILLER_TEST_MARKS": str(self.marks),
            "BACKFILLER_CELERY_QUEUE": f"test-{tag}",
            "BACKFILLER_TEST_GPU_QUEUE": f"test-{tag}-gpu",
            # The key daemons and workers share to sign their messages: one per cluster.
            "BACKFILLER_BROKER_KEY": secrets.token_hex(32),
        }

    @property
    def api(self) -> LiveServer:
        assert self.server is not None
        return self.server

    def start_server(self) -> LiveServer:
        self.server = PatientServer(self.database_url, DEFINITIONS, env=self.env)
        return self.server

    def start_daemon(self, *extra: str) -> CeleryDaemon:
        timeout = ["--heartbeat-timeout", str(self.heartbeat_timeout), "--lease-timeout", "15"]
        daemon = CeleryDaemon(self.database_url, self.broker, self.env, [*timeout, *extra])
        self.daemons.append(daemon)
        return daemon

    def start_worker(
        self, concurrency: int = 2, gpu: bool = False, extra: tuple[str, ...] = ()
    ) -> CeleryWorker:
        queues = self.env["BACKFILLER_CELERY_QUEUE"]
        if gpu:
            queues += "," + self.env["BACKFILLER_TEST_GPU_QUEUE"]
        worker = CeleryWorker(self.broker, self.env, concurrency, queues, extra)
        self.workers.append(worker)
        return worker

    def stop(self) -> None:
        processes: list[LiveProcess] = [*self.workers, *self.daemons]
        if self.server is not None:
            processes.append(self.server)
        for process in processes:  # all at once: each takes a moment to stop
            if process.proc.poll() is None:
                process.proc.terminate()
        for process in processes:
            process.stop()

    def runs(self, backfill_id: str) -> list[dict[str, Any]]:
        found: list[dict[str, Any]] = []
        after = None
        while True:
            page = gql(self.api, RUNS, {"id": backfill_id, "after": after})["backfill"]["runs"]
            found += page["nodes"]
            if not page["pageInfo"]["hasNextPage"]:
                return found
            after = page["pageInfo"]["endCursor"]


@contextmanager
def cluster(database_url: str, broker: str, marks: Path, **kwargs: Any) -> Iterator[Cluster]:
    made = Cluster(database_url, broker, marks, **kwargs)
    try:
        yield made
    except BaseException:
        for process in [*made.daemons, *made.workers]:  # what each said, for the report
            print(f"--- {type(process).__name__} {process.proc.pid} ---")
            print(process.output()[-6000:])
        raise
    finally:
        made.stop()


def overlaps(marks: Path) -> list[str]:
    return sorted(p.name for p in marks.glob("OVERLAP-*"))


def executions(marks: Path) -> dict[str, list[str]]:
    """Per partition, the run ids that executed it to the end (one line each)."""
    found: dict[str, list[str]] = {}
    for path in marks.glob("[0-9]*"):
        found[path.name] = [line.split()[0] for line in path.read_text().splitlines() if line]
    return found


def owner_of(output: str) -> str:
    """The lease owner a daemon printed on starting."""
    found = re.search(r"Backfiller daemon (\S+) running", output)
    assert found is not None, output
    return found.group(1)


def runs_in_flight(
    c: Cluster, keys: list[str], slots: int, seconds: float, *daemon_args: str
) -> tuple[CeleryDaemon, str, str]:
    """The API, one worker of ``slots`` processes and a daemon; a backfill of ``recorded``
    over ``keys`` (``seconds`` each), until ``slots`` of its runs execute. Returns the daemon,
    the backfill's id and the daemon's lease owner."""
    c.start_server()
    worker = c.start_worker(concurrency=slots)
    daemon = c.start_daemon(*daemon_args)
    worker.wait_ready()
    backfill = launch(c.api, "recorded", keys[0], keys[-1], runConfig={"seconds": seconds})

    def running() -> bool:
        return int(read(c.api, backfill)["counts"]["running"]) == slots

    wait_for(f"{slots} runs executing", running, 60)
    return daemon, backfill, owner_of(daemon.output())
