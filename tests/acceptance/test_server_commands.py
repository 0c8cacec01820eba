"""Server-side commands as a user runs them: bad definitions, db upgrade, schema export."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support import REPO, LiveServer


def backfiller(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    env.pop("BACKFILLER_DEFINITIONS", None)
    return subprocess.run(
        [sys.executable, "-m", "backfiller", *args],
        capture_output=True,
        text=True,
        env=env,
        cwd=cwd or REPO,
        timeout=60,
    )


@pytest.mark.parametrize(
    ("target", "expected"),
    [
        ("no_such_module:definitions", "no module named 'no_such_module'"),
        ("missing_colon", "must be given as 'module:attribute'"),
        (
            "tests.acceptance.userdefs.broken_import:definitions",
            "JSONDecodeError: Expecting property name",
        ),
        ("tests.acceptance.userdefs.duplicate_jobs:definitions", "two jobs are named 'load'"),
        (
            "tests.acceptance.userdefs.not_definitions:definitions",
            "is a dict, not backfiller.Definitions",
        ),
        ("tests.acceptance.userdefs.not_definitions:nothing", "has no attribute 'nothing'"),
    ],
)
def test_bad_definitions_give_one_clear_message(tmp_path: Path, target: str, expected: str) -> None:
    result = backfiller(
        "serve", "--definitions", target, "--database", f"sqlite:///{tmp_path / 'db.sqlite'}"
    )
    assert result.returncode == 2
    assert "Traceback" not in result.stderr
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("error: cannot load definitions")
    assert expected in lines[0]


def test_import_errors_point_at_the_users_line(tmp_path: Path) -> None:
    result = backfiller(
        "serve",
        "--definitions",
        "tests.acceptance.userdefs.broken_import:definitions",
        "--database",
        f"sqlite:///{tmp_path / 'db.sqlite'}",
    )
    assert "broken_import.py:5" in result.stderr


def test_db_upgrade_migrates_a_database(database_url: str, tmp_path: Path) -> None:
    fresh = f"sqlite:///{tmp_path / 'fresh.db'}"
    result = backfiller("db", "upgrade", "--database", fresh)
    assert result.returncode == 0, result.stderr
    assert "database at revision" in result.stdout
    again = backfiller("db", "upgrade", "--database", database_url)
    assert again.returncode == 0, again.stderr


def test_db_upgrade_with_a_bad_url_is_a_clear_error() -> None:
    result = backfiller("db", "upgrade", "--database", "mysql://nowhere/x")
    assert result.returncode == 2
    assert "Traceback" not in result.stderr
    assert "cannot upgrade the database" in result.stderr


def test_schema_export_prints_the_committed_sdl(tmp_path: Path) -> None:
    result = backfiller("schema", "export")
    assert result.returncode == 0
    assert result.stdout == (REPO / "schema.graphql").read_text()
    out = tmp_path / "schema.graphql"
    assert backfiller("schema", "export", "--output", str(out)).returncode == 0
    assert out.read_text() == result.stdout


def test_serve_hands_its_process_to_a_server_without_the_command_line(
    tmp_path: Path, database_url: str
) -> None:
    server = LiveServer(database_url, cwd=tmp_path, fresh=True)  # what a user's shell starts
    try:
        launched = server.graphql(
            'mutation { launchBackfill(input: {target: {job: "daily_sales"}, partitions: '
            '{range: {start: "2024-01-01", end: "2024-01-02"}}}) { userErrors { code } } }'
        )
        assert launched.json()["data"]["launchBackfill"]["userErrors"] == []
        pid = server.proc.pid  # the same process: whatever started `serve` signals the server
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
        assert b"backfiller.web.serving" in cmdline
        maps = Path(f"/proc/{pid}/maps").read_text()
        # typer checks options through pydantic; the server keeps neither.
        assert "pydantic_core" not in maps
        assert "Backfiller API at " + server.url in server.output_once_it_says("Backfiller API")
    finally:
        server.stop()
    assert server.proc.returncode == -signal.SIGTERM, "stopped by the signal sent to `serve`"


@pytest.mark.parametrize(
    ("options", "expected"),
    [
        (["--launcher", "elsewhere"], "error: --launcher must be local or celery"),
        (["--launcher", "celery", "--runs-per-task", "0"], "error: --runs-per-task must be at"),
        (["--launcher", "celery", "--broker", "http://x"], "error: --broker must be an amqp://"),
    ],
)
def test_bad_daemon_options_give_one_clear_message(options: list[str], expected: str) -> None:
    result = backfiller("daemon", *options)
    assert result.returncode == 2, result.stderr
    assert result.stderr.startswith(expected), result.stderr
    assert "Traceback" not in result.stderr


def test_a_notify_retry_wait_that_is_not_positive_is_one_clear_message(tmp_path: Path) -> None:
    result = backfiller(
        "daemon",
        "--definitions",
        "backfiller.examples.quickstart:definitions",
        "--database",
        f"sqlite:///{tmp_path / 'db.sqlite'}",
        "--notify-retry-seconds",
        "0",
    )
    assert result.returncode == 2, result.stderr
    assert result.stderr.startswith("error: --notify-retry-seconds must be more than 0")
    assert "Traceback" not in result.stderr
