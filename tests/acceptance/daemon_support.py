"""Helpers of the daemon's acceptance tests: real server, daemon and worker processes."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import threading
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from websockets.sync.client import connect

from tests.support import LAUNCH as LAUNCH
from tests.support import LiveProcess, LiveServer, launch_over_http
from tests.support import wait_for as wait_for

launch = launch_over_http

DEFINITIONS = "tests.defs.jobs_daemon:definitions"
READ = """
query($id: ID!) {
  backfill(id: $id) {
    id status error
    counts { total pending queued running succeeded failed canceled skipped }
  }
}
"""
RUNS = """
query($id: ID!, $after: String) {
  backfill(id: $id) {
    runs(first: 100, after: $after) {
      pageInfo { hasNextPage endCursor }
      nodes { id partitionKey attempt status failureReason errorMessage startedAt endedAt }
    }
  }
}
"""


class Daemon(LiveProcess):
    def __init__(
        self,
        database_url: str,
        workers: int = 2,
        extra: list[str] | None = None,
        env: dict[str, str] | None = None,
    ) -> None:
        args = [
            "daemon",
            "--database",
            database_url,
            "--definitions",
            DEFINITIONS,
            "--workers",
            str(workers),
            "--grace-seconds",
            "1",
            *(extra or []),
        ]
        super().__init__(args, env=env)

    def kill(self) -> None:
        """SIGKILL, like a crash: no cleanup at all."""
        os.kill(self.proc.pid, signal.SIGKILL)
        self.proc.wait(10)
        self.stop()

    def workers(self) -> list[int]:
        """Pids of this daemon's worker processes: the children of its workers' fork server
        (itself a child of the daemon; not multiprocessing's resource tracker)."""
        servers = [pid for pid in children_of(self.proc.pid) if b"forkserver" in _cmdline(pid)]
        return [pid for server in servers for pid in children_of(server)]


def children_of(parent: int) -> list[int]:
    """The live children of process ``parent``."""
    found = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        if int(fields[1]) == parent:
            found.append(int(stat.parent.name))
    return found


def _cmdline(pid: int) -> bytes:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return b""


def gql(server: LiveServer, query: str, variables: dict[str, Any] | None = None) -> Any:
    response = server.graphql(query, variables)
    assert response.status_code == 200, response.text
    body = response.json()
    assert "errors" not in body, body
    return body["data"]


def read(server: LiveServer, backfill_id: str) -> dict[str, Any]:
    backfill: dict[str, Any] = gql(server, READ, {"id": backfill_id})["backfill"]
    return backfill


def runs_of(server: LiveServer, backfill_id: str) -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = []
    after = None
    while True:
        page = gql(server, RUNS, {"id": backfill_id, "after": after})["backfill"]["runs"]
        found += page["nodes"]
        if not page["pageInfo"]["hasNextPage"]:
            return found
        after = page["pageInfo"]["endCursor"]


def wait_status(
    server: LiveServer, backfill_id: str, statuses: set[str], timeout: float = 60
) -> dict[str, Any]:
    def check() -> dict[str, Any] | None:
        backfill = read(server, backfill_id)
        return backfill if backfill["status"] in statuses else None

    found: dict[str, Any] = wait_for(f"{backfill_id} in {statuses}", check, timeout)
    return found


def adds_up(counts: dict[str, int]) -> bool:
    return counts["total"] == sum(v for k, v in counts.items() if k != "total")


def subscribe(server: LiveServer, query: str, variables: dict[str, Any]) -> list[dict[str, Any]]:
    """Every ``next`` payload of one graphql-transport-ws subscription, until it completes."""
    url = server.url.replace("http://", "ws://") + "/graphql/v1"
    messages: list[dict[str, Any]] = []
    with connect(url, subprotocols=["graphql-transport-ws"], open_timeout=10) as ws:  # type: ignore[list-item]
        ws.send(json.dumps({"type": "connection_init"}))
        assert json.loads(ws.recv(10))["type"] == "connection_ack"
        ws.send(
            json.dumps(
                {
                    "id": "1",
                    "type": "subscribe",
                    "payload": {"query": query, "variables": variables},
                }
            )
        )
        while True:
            message = json.loads(ws.recv(120))
            if message["type"] == "next":
                assert "errors" not in message["payload"], message
                messages.append(message["payload"]["data"])
            elif message["type"] == "complete":
                return messages
            elif message["type"] == "ping":
                ws.send(json.dumps({"type": "pong"}))
            else:
                raise AssertionError(message)


# -- the truth as the jobs saw it ------------------------------------------------------------------


@dataclass(frozen=True)
class Execution:
    """One execution of a job, from the marks of ``jobs_daemon._record``."""

    job: str
    partition: str
    run_id: str
    backfill_id: str
    started: float
    ended: float | None
    overlapped: bool
    pid: int = 0
    """The process that ran it (its marks file)."""
    last: bool = False
    """Whether it is the last execution its process recorded."""


def executions(folder: Path) -> list[Execution]:
    """Every execution recorded in ``folder``; ``ended`` is None for one killed mid-run."""
    found: list[Execution] = []
    for path in folder.glob("*.marks"):
        pid = int(path.stem)
        own: list[Execution] = []
        open_runs: dict[str, tuple[float, list[str], bool]] = {}
        for line in path.read_text().splitlines():
            kind, at, job, partition, run_id, backfill, *rest = line.split()
            if kind == "start":
                open_runs[run_id] = (float(at), [job, partition, backfill], bool(rest))
            else:
                started, (job, partition, backfill), overlapped = open_runs.pop(run_id)
                own.append(
                    Execution(job, partition, run_id, backfill, started, float(at), overlapped, pid)
                )
        for run_id, (started, (job, partition, backfill), overlapped) in open_runs.items():
            own.append(Execution(job, partition, run_id, backfill, started, None, overlapped, pid))
        if own:
            newest = max(own, key=lambda e: e.started)
            own = [replace(e, last=e is newest) for e in own]
        found += own
    return found


def most_at_once(found: list[Execution]) -> int:
    """The most executions running at the same instant (finished ones only)."""
    points = sorted(
        [(e.started, 1) for e in found if e.ended is not None]
        + [(e.ended, -1) for e in found if e.ended is not None]
    )
    most = now = 0
    for _, step in points:
        now += step
        most = max(most, now)
    return most


# -- a TCP proxy the test controls ---------------------------------------------------------------


class Proxy:
    """Forwards 127.0.0.1:<port> to a target port; :meth:`cut` breaks every connection and
    refuses new ones until :meth:`restore` (an outage of the database for whoever uses it)."""

    def __init__(self, target_port: int) -> None:
        self.target_port = target_port
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        self.up = True
        self.lock = threading.Lock()
        self.pairs: list[tuple[socket.socket, socket.socket]] = []
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self.listener.accept()
            except OSError:
                return
            with self.lock:
                if not self.up:
                    client.close()
                    continue
                try:
                    upstream = socket.create_connection(("127.0.0.1", self.target_port))
                except OSError:
                    client.close()
                    continue
                self.pairs.append((client, upstream))
            for a, b in ((client, upstream), (upstream, client)):
                threading.Thread(target=self._pipe, args=(a, b), daemon=True).start()

    @staticmethod
    def _pipe(source: socket.socket, sink: socket.socket) -> None:
        try:
            while data := source.recv(65536):
                sink.sendall(data)
        except OSError:
            pass
        finally:
            for s in (source, sink):
                with contextlib.suppress(OSError):
                    s.shutdown(socket.SHUT_RDWR)

    def cut(self) -> None:
        with self.lock:
            self.up = False
            pairs, self.pairs = self.pairs, []
        for pair in pairs:
            for s in pair:
                with contextlib.suppress(OSError):
                    s.shutdown(socket.SHUT_RDWR)
                s.close()

    def restore(self) -> None:
        with self.lock:
            self.up = True

    def close(self) -> None:
        self.cut()
        self.listener.close()
