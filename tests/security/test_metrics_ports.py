"""The metrics ports of ``serve`` and ``daemon`` are served as the API's port is: half-open
connections cost neither threads nor memory and are closed at the client deadline, a
foreign ``Host`` is refused on every port, and every answer of every port, a masked 500
included, carries the security headers."""

from __future__ import annotations

import contextlib
import socket
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.acceptance.daemon_support import Daemon, wait_for
from tests.support import LiveProcess, LiveServer, free_port

pytestmark = pytest.mark.acceptance

DEFS = "tests.defs.jobs_daemon:definitions"
CLIENT_TIMEOUT = 3.0
HEADERS = ("x-frame-options", "x-content-type-options", "content-security-policy")
MiB = 1024 * 1024


def status_of(pid: int, field: str) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(f"{field}:"):
            return int(line.split()[1])
    raise AssertionError(field)


def answers(url: str, host: str | None = None) -> bool:
    try:
        headers = {"Host": host} if host else None
        return httpx.get(url, headers=headers, timeout=2).status_code == 200
    except httpx.HTTPError:
        return False


@pytest.fixture
def server(database_url: str) -> Iterator[tuple[LiveServer, int]]:
    port = free_port()
    live = LiveServer(
        database_url,
        DEFS,
        extra=["--metrics-port", str(port)],
        env={"BACKFILLER_CLIENT_TIMEOUT": str(CLIENT_TIMEOUT)},
    )
    wait_for("the metrics port", lambda: answers(f"http://127.0.0.1:{port}/healthz"))
    yield live, port
    live.stop()


@pytest.fixture
def daemon(database_url: str) -> Iterator[tuple[Daemon, int]]:
    port = free_port()
    live = Daemon(
        database_url,
        workers=1,
        extra=["--metrics-port", str(port)],
        env={"BACKFILLER_CLIENT_TIMEOUT": str(CLIENT_TIMEOUT)},
    )
    wait_for("the metrics port", lambda: answers(f"http://127.0.0.1:{port}/healthz"), timeout=60)
    yield live, port
    live.stop()


def flood(process: LiveProcess, port: int, count: int = 800) -> None:
    """``count`` connections that each send half a request and wait: the process keeps its
    threads and memory, and every connection is closed by the client deadline."""
    pid = process.proc.pid
    threads, memory = status_of(pid, "Threads"), status_of(pid, "VmRSS") * 1024
    opened: list[socket.socket] = []
    try:
        for _ in range(count):
            conn = socket.create_connection(("127.0.0.1", port), timeout=5)
            with contextlib.suppress(OSError):  # closed at once: over the connection cap
                conn.sendall(b"GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ")
            opened.append(conn)
        time.sleep(0.5)
        assert status_of(pid, "Threads") <= threads + 2
        assert status_of(pid, "VmRSS") * 1024 - memory < 30 * MiB
        begun = time.monotonic()
        for conn in opened:
            conn.settimeout(max(0.1, CLIENT_TIMEOUT + 5 - (time.monotonic() - begun)))
            with contextlib.suppress(ConnectionResetError):
                assert conn.recv(1024) == b""  # closed by the server, nothing answered
        assert time.monotonic() - begun < CLIENT_TIMEOUT + 5
    finally:
        for conn in opened:
            conn.close()
    # Once they are gone, the port answers as before.
    assert answers(f"http://127.0.0.1:{port}/metrics")
    assert status_of(pid, "Threads") <= threads + 2


def test_half_open_connections_to_the_servers_metrics_port(
    server: tuple[LiveServer, int],
) -> None:
    flood(*server)


def test_half_open_connections_to_the_daemons_metrics_port(daemon: tuple[Daemon, int]) -> None:
    flood(*daemon)


def test_a_foreign_host_is_refused_on_every_port_and_every_answer_has_the_headers(
    server: tuple[LiveServer, int], daemon: tuple[Daemon, int]
) -> None:
    (api, api_metrics), (_, daemon_metrics) = server, daemon
    bases = [api.url, f"http://127.0.0.1:{api_metrics}", f"http://127.0.0.1:{daemon_metrics}"]
    for base in bases:
        for path in ("/metrics", "/readyz"):
            foreign = httpx.get(f"{base}{path}", headers={"Host": "rebound.example"})
            assert foreign.status_code == 421, (base, path)
            assert "backfiller_" not in foreign.text and "checks" not in foreign.text
            port = base.rsplit(":", 1)[1]
            for host in (f"127.0.0.1:{port}", f"localhost:{port}", f"[::1]:{port}"):
                assert httpx.get(f"{base}{path}", headers={"Host": host}).status_code in (
                    200,
                    404,  # /readyz of the server's metrics port: not served there
                ), (base, path, host)
        assert httpx.get(f"{base}/healthz", headers={"Host": "rebound.example"}).status_code == 200
        for answer in (
            httpx.get(f"{base}/metrics", headers={"Host": "rebound.example"}),
            httpx.get(f"{base}/metrics"),
            httpx.get(f"{base}/healthz"),
            httpx.get(f"{base}/nowhere"),
            httpx.post(f"{base}/metrics", content=b"x"),
        ):
            for name in HEADERS:
                assert name in answer.headers, (base, answer.request.url, answer.status_code)


def _child_environment(pid: int, variable: str) -> str | None:
    """A variable of the environment of one of ``pid``'s children (set after it started)."""
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            if int(stat.read_text().rsplit(")", 1)[1].split()[1]) != pid:
                continue
            environ = (stat.parent / "environ").read_bytes().split(b"\0")
        except (OSError, IndexError, ValueError):
            continue
        for item in environ:
            name, _, value = item.partition(b"=")
            if name.decode() == variable:
                return value.decode()
    return None


def corrupt(directory: str) -> None:
    """A metrics file that is not one (a disk that failed, a file copied by hand)."""
    Path(directory, "counter_4242.db").write_bytes(b"not a metrics file at all")


def test_a_masked_500_carries_the_headers_on_every_port(database_url: str) -> None:
    api = LiveServer(database_url, DEFS, extra=["--workers", "2"])
    metrics_port = free_port()
    daemon = Daemon(database_url, workers=1, extra=["--metrics-port", str(metrics_port)])
    try:
        shared = wait_for(
            "the server processes' metrics directory",
            lambda: _child_environment(api.proc.pid, "PROMETHEUS_MULTIPROC_DIR"),
        )
        workers = wait_for(
            "the daemon's workers' metrics directory",
            lambda: _child_environment(daemon.proc.pid, "BACKFILLER_WORKER_METRICS_DIR"),
            timeout=60,
        )
        wait_for("the metrics port", lambda: answers(f"http://127.0.0.1:{metrics_port}/healthz"))
        corrupt(shared)
        corrupt(workers)
        for url in (f"{api.url}/metrics", f"http://127.0.0.1:{metrics_port}/metrics"):
            answer = httpx.get(url, timeout=10)
            assert answer.status_code == 500, (url, answer.text[:200])
            for name in HEADERS:
                assert name in answer.headers, (url, name)
            assert "unpack" not in answer.text and "Traceback" not in answer.text
        assert "x-request-id" in httpx.get(f"{api.url}/metrics").headers
    finally:
        daemon.stop()
        api.stop()
