"""What the server's command line loads, and what a starting daemon says about its runs."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from backfiller.cli.app import command_of
from backfiller.cli.daemon import DaemonOptions, started_line


@pytest.mark.parametrize(
    ("argv", "command"),
    [
        (["serve", "--port", "8000"], "serve"),
        (["--log-format", "json", "daemon"], "daemon"),
        (["--otlp-endpoint", "http://127.0.0.1:4318", "--log-format=json", "worker"], "worker"),
        (["--log-format", "serve", "launch", "serve"], "launch"),  # an option's value is no command
        (["--help"], None),
        ([], None),
    ],
)
def test_the_command_of_a_command_line(argv: list[str], command: str | None) -> None:
    assert command_of(argv) == command


LOADED = """
import json, sys
from backfiller_client.cli.app import register_server_commands
register_server_commands(sys.argv[1:])
print(json.dumps(sorted(m for m in sys.modules if m.split(".")[0] in ("httpx", "rich"))))
"""


def loaded_by(*argv: str) -> list[str]:
    """The httpx and rich modules the command line ``argv`` imports before it runs."""
    done = subprocess.run(
        [sys.executable, "-c", LOADED, *argv], capture_output=True, text=True, check=True
    )
    found: list[str] = json.loads(done.stdout)
    return found


def test_server_commands_start_without_the_clients_commands_and_httpx() -> None:
    assert loaded_by("serve", "--port", "8000") == []
    assert loaded_by("--log-format", "json", "daemon") == []
    # A client command, and the help that lists every command, load them.
    assert "httpx" in loaded_by("backfills", "list")
    assert "httpx" in loaded_by("--help")


def test_a_celery_daemon_names_its_broker_and_queue_not_a_local_pool(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("BACKFILLER_CELERY_QUEUE", "etl")
    options = DaemonOptions(
        "defs:definitions",
        None,
        None,
        None,
        5.0,
        30.0,
        launcher="celery",
        broker="amqp://guest:hunter2@127.0.0.1:5672//",
    )
    line = started_line("d-1", options)
    assert "Celery launcher" in line and "127.0.0.1:5672" in line and "'etl'" in line
    assert "hunter2" not in line and "worker" not in line
    local = DaemonOptions("defs:definitions", 3, None, None, 5.0, 30.0)
    assert started_line("d-1", local) == "Backfiller daemon d-1 running with 3 workers"
