"""Under ``--log-format json`` every line of every process is one JSON object.

Each process of a deployment starts for real with ``--log-format json``: ``serve``, ``daemon``
with the local launcher, ``daemon --launcher celery`` and ``backfiller worker`` on RabbitMQ,
and ``backfiller dev``; a small backfill goes through them; they are stopped as a user stops
them (SIGTERM, or Ctrl+C for ``dev``); then every line they wrote, on stdout and on stderr,
must parse as a JSON object with the fields of a log line.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from tests.acceptance.celery.support import DEFINITIONS as CELERY_DEFINITIONS
from tests.acceptance.celery.support import Cluster, broker_url
from tests.acceptance.daemon_support import DEFINITIONS, launch, wait_status
from tests.support import REPO, LiveProcess, LiveServer

pytestmark = pytest.mark.acceptance

ROOT_OPTIONS = ["--log-format", "json"]
FIELDS = {"time", "level", "logger", "message"}


class Json(LiveProcess):
    """A process started with ``--log-format json`` before its command."""

    def __init__(
        self,
        args: list[str],
        env: dict[str, str] | None = None,
        cwd: Path | None = None,
        fresh: bool = False,
    ) -> None:
        super().__init__([*ROOT_OPTIONS, *args], env=env, cwd=cwd, fresh=fresh)


class JsonServer(LiveServer, Json):
    pass


class JsonDaemon(Json):
    def __init__(self, database_url: str, extra: list[str], env: dict[str, str]) -> None:
        args = ["daemon", "--database", database_url, "--grace-seconds", "1", *extra]
        super().__init__(args, env=env)


def stopped(process: LiveProcess, sig: signal.Signals = signal.SIGTERM) -> str:
    """Everything ``process`` wrote (stdout and stderr), once it has stopped on ``sig``."""
    if process.proc.poll() is None:
        process.proc.send_signal(sig)
    with contextlib.suppress(subprocess.TimeoutExpired):
        process.proc.wait(30)
    output = process.output()
    process.stop()
    return output


def assert_every_line_is_json(name: str, output: str) -> list[dict[str, object]]:
    """The lines of ``output``, parsed; fails naming every line that is not a JSON log line."""
    lines, wrong = [], []
    for number, line in enumerate(output.splitlines(), 1):
        try:
            parsed = json.loads(line)
        except ValueError:
            parsed = None
        if isinstance(parsed, dict) and set(parsed) >= FIELDS:
            lines.append(parsed)
        else:
            wrong.append(f"line {number}: {line!r}")
    assert not wrong, f"{name} wrote lines that are not JSON log lines:\n" + "\n".join(wrong)
    assert lines, f"{name} wrote nothing"
    return lines


def test_serve_and_local_daemon_write_only_json(database_url: str) -> None:
    server = JsonServer(database_url, DEFINITIONS)
    daemon = JsonDaemon(database_url, ["--definitions", DEFINITIONS, "--workers", "1"], {})
    outputs: dict[str, str] = {}
    try:
        backfill = launch(server, "noop", "2001-01-01", "2001-01-03")
        wait_status(server, backfill, {"COMPLETED_SUCCESS"}, timeout=60)
    finally:
        outputs["daemon"] = stopped(daemon)
        outputs["serve"] = stopped(server)
    served = assert_every_line_is_json("serve", outputs["serve"])
    api = f"Backfiller API at {server.url}/graphql/v1"  # the address as it is, path included
    assert any(str(line["message"]).startswith(api) for line in served)
    started = assert_every_line_is_json("daemon", outputs["daemon"])
    assert any("Backfiller daemon" in str(line["message"]) for line in started)


@pytest.mark.postgresql_only("the Celery launcher's tests run on PostgreSQL")
def test_celery_daemon_and_worker_write_only_json(database_url: str, tmp_path: Path) -> None:
    broker = broker_url("rabbitmq")
    marks = tmp_path / "marks"
    marks.mkdir()
    c = Cluster(database_url, broker, marks)
    server = worker = daemon = None
    outputs: dict[str, str] = {}
    try:
        server = c.server = JsonServer(database_url, CELERY_DEFINITIONS, env=c.env)
        worker_env = {**c.env, "BACKFILLER_BROKER_URL": broker}
        queues = ["--queues", c.env["BACKFILLER_CELERY_QUEUE"], "--concurrency", "1"]
        worker = Json(["worker", "--definitions", CELERY_DEFINITIONS, *queues], env=worker_env)
        extra = ["--definitions", CELERY_DEFINITIONS, "--launcher", "celery"]
        daemon = JsonDaemon(database_url, extra, worker_env)
        backfill = launch(server, "recorded", "2001-01-01", "2001-01-02")
        wait_status(server, backfill, {"COMPLETED_SUCCESS"}, timeout=60)
    finally:
        for name, process in (("worker", worker), ("daemon", daemon), ("serve", server)):
            if process is not None:
                outputs[name] = stopped(process)
    for name, output in outputs.items():
        assert_every_line_is_json(name, output)
        assert c.env["BACKFILLER_BROKER_KEY"] not in output
        assert "guest:guest" not in output


def test_dev_writes_only_json(database_url: str) -> None:
    dev = JsonServer(database_url, command="dev", extra=["--workers", "1"])
    try:
        job = {"target": {"job": "daily_sales"}, "partitions": {"keys": ["2024-01-01"]}}
        backfill = launch(dev, job)
        wait_status(dev, backfill, {"COMPLETED_SUCCESS"}, timeout=60)
    finally:
        output = stopped(dev, signal.SIGINT)
    lines = assert_every_line_is_json("dev", output)
    running = f"Backfiller is running: open {dev.url}/ (API at {dev.url}/graphql/v1)"
    assert any(str(line["message"]).startswith(running) for line in lines)


def test_refusals_warnings_and_crashes_are_json_lines_too() -> None:
    """A command that refuses its options says why in a JSON line (``error: ...`` in text);
    Python's warnings and an exception nothing caught, in any thread, are JSON lines too."""
    refused = subprocess.run(
        [sys.executable, "-m", "backfiller", *ROOT_OPTIONS, "daemon", "--launcher", "nope"],
        capture_output=True,
        text=True,
        cwd=REPO,
    )
    assert refused.returncode == 2 and refused.stdout == ""
    (line,) = assert_every_line_is_json("daemon --launcher nope", refused.stderr)
    assert line["level"] == "ERROR" and line["logger"] == "backfiller.command"
    assert line["message"] == "--launcher must be local or celery"
    text = subprocess.run(
        [sys.executable, "-m", "backfiller", "daemon", "--launcher", "nope"],
        capture_output=True,
        text=True,
        cwd=REPO,
    )
    assert text.stderr == "error: --launcher must be local or celery\n"
    crashing = """if True:
        import threading, warnings
        from backfiller.logs import configure_logging
        configure_logging()
        warnings.warn("an old way")
        thread = threading.Thread(target=lambda: 1 / 0)
        thread.start()
        thread.join()
        raise RuntimeError("token bft_0123456789abcdef went wrong")
    """
    crashed = subprocess.run(
        [sys.executable, "-c", crashing],
        capture_output=True,
        text=True,
        cwd=REPO,
        env={**os.environ, "BACKFILLER_LOG_FORMAT": "json"},
    )
    assert crashed.returncode == 1 and crashed.stdout == ""
    warned, thread, main = assert_every_line_is_json("a crash", crashed.stderr)
    assert warned["logger"] == "py.warnings" and "an old way" in str(warned["message"])
    assert "ZeroDivisionError" in str(thread["exception"])
    assert main["level"] == "CRITICAL" and "RuntimeError" in str(main["exception"])
    assert "0123456789abcdef" not in crashed.stderr  # scrubbed like any line
