"""No secret of the broker on a command line, and no Celery launcher without its key.

``backfiller daemon`` and ``backfiller worker`` read the broker's URL from
``$BACKFILLER_BROKER_URL`` or ``--broker-file`` and the shared key from
``$BACKFILLER_BROKER_KEY`` or ``--broker-key-file``; a password given in an argument works,
with a one-line warning; without a key they refuse to start (unless ``--insecure-broker``)
and say how to make one. A worker started from files has neither the password nor the key on
the command line or in the environment of any of its processes (its pool's included).

Durations: about 2 s each for the refusals; about 15 s for the worker (RabbitMQ).
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.acceptance.celery.support import CeleryWorker, broker_url
from tests.support import REPO, LiveProcess

pytestmark = pytest.mark.any_database

PASSWORD_WARNING = "warning: {option} holds a password, on a command line that every local user"


def backfiller(*args: str, **env: str) -> subprocess.CompletedProcess[str]:
    clean = {k: v for k, v in os.environ.items() if not k.startswith("BACKFILLER_")}
    return subprocess.run(
        [sys.executable, "-m", "backfiller", *args],
        capture_output=True,
        text=True,
        env={**clean, "PYTHONPATH": str(REPO), **env},
        cwd=REPO,
        timeout=120,
    )


def test_without_a_key_neither_a_daemon_nor_a_worker_starts() -> None:
    broker = {"BACKFILLER_BROKER_URL": "amqp://127.0.0.1:1//"}
    for command in (["worker"], ["daemon", "--launcher", "celery"]):
        result = backfiller(*command, **broker)
        assert result.returncode == 2, result.stderr
        (line,) = result.stderr.splitlines()
        assert line.startswith("error: the Celery launcher signs the messages")
        assert "$BACKFILLER_BROKER_KEY" in line and "--broker-key-file" in line
        assert "backfiller worker --generate-broker-key" in line and "--insecure-broker" in line
    made = backfiller("worker", "--generate-broker-key")
    assert made.returncode == 0 and re.fullmatch(r"[0-9a-f]{64}\n", made.stdout)
    short = backfiller("worker", BACKFILLER_BROKER_KEY="too-short", **broker)
    assert short.returncode == 2 and "is too short" in short.stderr


def test_a_password_in_an_argument_is_warned_about() -> None:
    key = {"BACKFILLER_BROKER_KEY": "k" * 64}
    result = backfiller(
        "daemon",
        "--launcher",
        "celery",
        "--broker",
        "ftp://user:hunter2@127.0.0.1//",  # then refused: not a broker URL
        "--database",
        "postgresql+psycopg://user:hunter2@127.0.0.1:1/x",
        **key,
    )
    assert result.returncode == 2
    lines = result.stderr.splitlines()
    assert lines[0].startswith(PASSWORD_WARNING.format(option="--database"))
    assert "$BACKFILLER_DATABASE_URL" in lines[0]
    assert lines[1].startswith(PASSWORD_WARNING.format(option="--broker"))
    assert "$BACKFILLER_BROKER_URL or --broker-file" in lines[1]
    assert lines[2].startswith("error: --broker must be an amqp:// or redis:// URL")
    assert "hunter2" not in lines[2]  # the error names the URL without its password
    quiet = backfiller("worker", "--broker", "redis://127.0.0.1:1/0", "--concurrency", "0", **key)
    assert quiet.stderr == "error: --concurrency must be at least 1\n"  # no password: no warning


def test_a_worker_from_files_shows_no_secret_in_any_process(tmp_path: Path) -> None:
    url = broker_url("rabbitmq")  # guest:guest
    password = url.split(":")[2].split("@")[0]
    key = "k3y-" + "0123456789abcdef" * 4
    (tmp_path / "broker").write_text(url + "\n")
    (tmp_path / "key").write_text(key + "\n")
    for name in ("broker", "key"):
        (tmp_path / name).chmod(0o600)
    env = {k: v for k, v in os.environ.items() if not k.startswith("BACKFILLER_")}
    env["BACKFILLER_CELERY_QUEUE"] = f"test-cli-{os.getpid()}"
    args = ["worker", "--definitions", "tests.acceptance.celery.defs:definitions"]
    args += ["--broker-file", str(tmp_path / "broker"), "--broker-key-file", str(tmp_path / "key")]
    process = FromFiles([*args, "--concurrency", "2", "--loglevel", "INFO"], env)
    try:
        process.wait_ready()
        pids = [process.proc.pid, *process.pool()]
        assert len(pids) == 3
        for pid in pids:
            for part in ("cmdline", "environ"):
                text = Path(f"/proc/{pid}/{part}").read_bytes().decode(errors="replace")
                assert f":{password}@" not in text and key not in text, (pid, part)
        assert "holds a password" not in process.output()
    finally:
        process.stop()


class FromFiles(CeleryWorker):
    """A worker started with the arguments given, and nothing else."""

    def __init__(self, args: list[str], env: dict[str, str]) -> None:
        LiveProcess.__init__(self, args, env=env)
