"""The TypeScript client (clients/typescript): generated code current, type-checked, and run
with Node against a live server."""

from __future__ import annotations

import fcntl
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.acceptance.client_support import DEFS, create_token
from tests.support import REPO, LiveServer, free_port, live_server

PACKAGE = REPO / "clients" / "typescript"
OPERATIONS = REPO / "contracts" / "v1" / "operations" / "typescript_client.graphql"


def npm(*args: str, cwd: Path = PACKAGE, env: dict[str, str] | None = None) -> str:
    """Run npm; fail the test with its output when it fails."""
    executable = shutil.which("npm")
    assert executable, "npm (Node 20+) is needed for the TypeScript client's tests"
    done = subprocess.run(
        [executable, *args],
        cwd=cwd,
        env={**os.environ, **(env or {})},
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, f"npm {' '.join(args)} failed:\n{done.stdout}\n{done.stderr}"
    return done.stdout + done.stderr


@pytest.fixture(scope="module")
def installed() -> Path:
    """``npm ci`` from the lock file, once, when node_modules is missing.

    The SQLite and PostgreSQL suites run side by side: a file lock keeps them from installing
    into the same folder at once.
    """
    with (PACKAGE / ".npm-install.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not (PACKAGE / "node_modules" / ".package-lock.json").exists():
            npm("ci", "--no-audit", "--no-fund")
    return PACKAGE


server = live_server(DEFS)

# A second server on the same database, with ``--auth token``.
secured = live_server(DEFS, needs=("server",), auth="token")


def test_generated_code_is_current(installed: Path) -> None:
    output = npm("run", "check-generated")
    assert "stale" not in output


def test_the_drift_check_fails_on_a_stale_operation(installed: Path, tmp_path: Path) -> None:
    """A copy of the package whose operation document gained a field: the check must fail."""
    copy = tmp_path / "clients" / "typescript"
    shutil.copytree(
        PACKAGE, copy, ignore=shutil.ignore_patterns("node_modules", "dist"), symlinks=True
    )
    (copy / "node_modules").symlink_to(PACKAGE / "node_modules", target_is_directory=True)
    shutil.copy(REPO / "schema.graphql", tmp_path / "schema.graphql")
    operations = tmp_path / "contracts" / "v1" / "operations"
    operations.mkdir(parents=True)
    text = OPERATIONS.read_text()
    assert "fragment TsUserError on UserError {\n  field\n" in text
    stale = text.replace(
        "fragment TsUserError on UserError {\n  field\n",
        "fragment TsUserError on UserError {\n  field\n  __typename\n",
    )
    (operations / OPERATIONS.name).write_text(stale)
    executable = shutil.which("npm")
    assert executable
    done = subprocess.run(
        [executable, "run", "check-generated"], cwd=copy, capture_output=True, text=True
    )
    assert done.returncode != 0
    assert "src/generated/operations.ts" in done.stdout + done.stderr


def test_it_type_checks(installed: Path) -> None:
    npm("run", "typecheck")


def test_it_works_against_a_live_server(
    installed: Path, server: LiveServer, secured: LiveServer, database_url: str
) -> None:
    npm("run", "build")
    output = npm(
        "exec",
        "--",
        "node",
        "--test",
        "--test-reporter=tap",
        "dist/test/",
        env={
            "BACKFILLER_URL": server.url,
            "BACKFILLER_DOWN_URL": f"http://127.0.0.1:{free_port()}",
            "BACKFILLER_AUTH_URL": secured.url,
            "BACKFILLER_TOKEN": create_token(database_url, "operator"),
            "BACKFILLER_VIEWER_TOKEN": create_token(database_url, "viewer"),
        },
    )
    assert "\n# fail 0\n" in output, output
    for name in (
        "updates a backfill's limit, priority and title, and reads them back",
        "marks a partition skipped with a reason; a blank reason is a typed userError",
    ):
        assert re.search(rf"^\s*ok \d+ - {re.escape(name)}$", output, re.M), output
    passed = re.search(r"^# pass (\d+)$", output, re.M)
    assert passed is not None and int(passed[1]) >= 12, output
