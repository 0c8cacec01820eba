"""What a newcomer sees in the first hour: quiet starts, plain grammar, help that matches what
it accepts, errors without internal names. (The README itself runs in test_docs_run.py.)"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest
from typer.testing import CliRunner

from backfiller.cli.app import app, register_commands
from tests.support import REPO, LiveProcess, LiveServer, free_port

pytestmark = pytest.mark.acceptance

register_commands()  # as main() does


def test_serve_and_daemon_start_quietly_on_a_new_database(tmp_path: Path) -> None:
    # A new SQLite database is migrated at start: Alembic's INFO lines are not shown.
    server = LiveServer(f"sqlite:///{tmp_path}/serve.db", cwd=tmp_path)
    try:
        served = server.output_once_it_says("Backfiller API at")
    finally:
        server.stop()
    assert "Backfiller API at" in served
    assert "alembic" not in served.lower(), served
    daemon = LiveProcess(
        ["daemon", "--database", f"sqlite:///{tmp_path}/daemon.db", "--workers", "1"],
        cwd=tmp_path,
    )
    try:
        started = daemon.output_once_it_says("running with", timeout=90)
    finally:
        daemon.stop()
    assert re.search(r"running with 1 worker$", started, re.M), started
    assert "alembic" not in started.lower(), started


def test_help_and_version_say_what_the_command_accepts() -> None:
    runner = CliRunner()
    launch_help = runner.invoke(app, ["launch", "--help"], env={"COLUMNS": "200"}).stdout
    assert "[default: missing]" in launch_help and "MISSING" not in launch_help
    assert "[default: oldest_first]" in launch_help
    version = runner.invoke(app, ["--version"])
    assert version.exit_code == 0 and re.fullmatch(r"backfiller \d+\.\d+\.\d+\S*\n", version.stdout)


def test_errors_name_no_internal_operation() -> None:
    down = f"http://127.0.0.1:{free_port()}"
    done = CliRunner().invoke(app, ["launch", "daily_sales", "--all", "--url", down])
    assert done.exit_code == 3
    assert done.stderr.startswith(f"error: cannot reach the server at {down}: "), done.stderr
    assert not re.search(r"\bPy[A-Z]\w+", done.stderr), done.stderr


def test_make_dev_needs_python_and_make_only() -> None:
    # What `make dev` would run, from a checkout with or without a virtual environment.
    planned = subprocess.run(
        ["make", "-n", "-B", "dev"], cwd=REPO, capture_output=True, text=True, check=True
    ).stdout
    assert "backfiller dev" in planned and "source .venv/bin/activate" in planned
    assert not re.search(r"\b(npm|node|npx)\b", planned), planned
