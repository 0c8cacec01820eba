"""`backfiller serve` auth flags and `backfiller token create|list|revoke`, as real processes."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest
from sqlalchemy import create_engine, text

from backfiller.storage.engine import sync_database_url
from tests.security.conftest import DEFS
from tests.support import REPO, LiveServer


def process(*args: str) -> subprocess.CompletedProcess[str]:
    """The real command in its own process."""
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    env.pop("BACKFILLER_AUTH", None)
    return subprocess.run(
        [sys.executable, "-m", "backfiller", *args],
        capture_output=True,
        text=True,
        env=env,
        cwd=REPO,
        timeout=120,
    )


@dataclass
class Ran:
    returncode: int
    stdout: str
    stderr: str


def backfiller(*args: str) -> Ran:
    """The same command in this process (starting Python for each is slow on a busy machine)."""
    from typer.testing import CliRunner

    from backfiller.cli import server, tokens  # noqa: F401  (registers the commands)
    from backfiller.cli.app import app

    result = CliRunner().invoke(app, list(args), env={"BACKFILLER_AUTH": None})
    return Ran(result.exit_code, result.stdout, result.stderr)


def test_the_real_process_refuses_auth_none_on_all_interfaces() -> None:
    result = process("serve", "--auth", "none", "--host", "0.0.0.0", "--database", "sqlite://")
    assert result.returncode == 2
    assert "refusing to serve without authentication" in result.stderr


@pytest.mark.parametrize("host", ["0.0.0.0", "192.0.2.10", "::"])
def test_auth_none_refuses_a_non_loopback_address(host: str) -> None:
    result = backfiller("serve", "--auth", "none", "--host", host, "--database", "sqlite://")
    assert result.returncode == 2
    assert "refusing to serve without authentication" in result.stderr
    assert "--insecure-no-auth" in result.stderr
    assert "Traceback" not in result.stderr


def test_insecure_no_auth_lets_it_past_the_check_with_a_warning() -> None:
    # Stops right after the check, at the definitions, so nothing is ever bound.
    result = backfiller(
        "serve",
        "--auth",
        "none",
        "--insecure-no-auth",
        "--host",
        "0.0.0.0",
        "--definitions",
        "no_such_module:definitions",
    )
    assert "WITHOUT authentication" in result.stderr
    assert "cannot load definitions" in result.stderr


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--auth", "maybe"], "--auth must be"),
        (["--cors-origin", "*"], "--cors-origin takes an origin"),
        (["--max-partitions-per-backfill", "0"], "at least 1"),
        (["--rate-limit", "-1"], "--rate-limit"),
        (["--max-operations-per-token", "-1"], "--max-operations-per-token must be 0"),
        (["--max-operations-per-socket", "-1"], "--max-operations-per-socket must be 0"),
    ],
)
def test_bad_access_flags_are_one_clear_error(args: list[str], message: str) -> None:
    result = backfiller("serve", *args)
    assert result.returncode == 2
    assert message in result.stderr
    assert "Traceback" not in result.stderr


def test_dev_takes_the_operation_caps_too(tmp_path: Path) -> None:
    from backfiller.cli import daemon  # noqa: F401  (registers dev)

    database = f"sqlite:///{tmp_path / 'dev.db'}"
    for flag in ("--max-operations-per-token", "--max-operations-per-socket"):
        result = backfiller("dev", "--database", database, "--definitions", DEFS, flag, "-1")
        assert result.returncode == 2
        assert f"{flag} must be 0 (no limit) or more" in result.stderr


def test_token_lifecycle_through_the_cli(database_url: str) -> None:
    created = backfiller(
        "token", "create", "--name", "ci", "--role", "operator", "--database", database_url
    )
    assert created.returncode == 0, created.stderr
    secret = created.stdout.strip()
    assert secret.startswith("bft_") and len(secret) > 40
    assert "shown only now" in created.stderr
    # Only the hash is stored; the secret appears nowhere in the database.
    engine = create_engine(sync_database_url(database_url))
    with engine.connect() as connection:
        rows = [tuple(r) for r in connection.execute(text("SELECT * FROM api_tokens"))]
    engine.dispose()
    assert len(rows) == 1
    assert hashlib.sha256(secret.encode()).hexdigest() in rows[0]
    assert not any(secret in str(value) for value in rows[0])

    twice = backfiller("token", "create", "--name", "ci", "--database", database_url)
    assert twice.returncode == 2 and "already named 'ci'" in twice.stderr
    past = backfiller(
        "token", "create", "--name", "old", "--expires", "2001-01-01", "--database", database_url
    )
    assert past.returncode == 2 and "in the past" in past.stderr
    as_json = backfiller(
        "token", "create", "--name", "reader", "--expires", "30d", "--json",
        "--database", database_url,
    )  # fmt: skip
    reader = json.loads(as_json.stdout)
    assert reader["role"] == "viewer" and reader["expiresAt"] and reader["token"].startswith("bft_")
    assert reader["jobs"] is None
    scoped = backfiller(
        "token", "create", "--name", "sales", "--role", "operator", "--job", "daily_sales",
        "--job", "region_report", "--json", "--database", database_url,
    )  # fmt: skip
    assert json.loads(scoped.stdout)["jobs"] == ["daily_sales", "region_report"]

    listed = backfiller("token", "list", "--json", "--database", database_url)
    entries = [json.loads(line) for line in listed.stdout.splitlines()]
    assert [(e["name"], e["role"], e["state"], e["jobs"]) for e in entries] == [
        ("ci", "operator", "active", None),
        ("reader", "viewer", "active", None),
        ("sales", "operator", "active", ["daily_sales", "region_report"]),
    ]
    assert secret not in listed.stdout and reader["token"] not in listed.stdout

    server = LiveServer(database_url, DEFS, auth="token")
    try:
        url = f"{server.url}/graphql/v1"
        me = {"query": "{ me { name role } }"}
        headers = {"Authorization": f"Bearer {secret}"}
        assert httpx.post(url, json=me, headers=headers).json() == {
            "data": {"me": {"name": "ci", "role": "OPERATOR"}}
        }
        moved = backfiller("token", "set-team", "ci", "--team", "sales", "--database", database_url)
        assert moved.returncode == 0, moved.stderr
        team = {"query": "{ me { team } }"}
        assert httpx.post(url, json=team, headers=headers).json() == {
            "data": {"me": {"team": "sales"}}
        }
        unknown = backfiller(
            "token", "set-team", "nobody", "--team", "x", "--database", database_url
        )
        assert unknown.returncode == 1
        revoked = backfiller("token", "revoke", "ci", "--database", database_url)
        assert revoked.returncode == 0 and "revoked tok_1" in revoked.stdout
        assert httpx.post(url, json=me, headers=headers).status_code == 401
        again = backfiller("token", "revoke", "ci", "--database", database_url)
        assert again.returncode == 1
    finally:
        server.stop()
    listed = backfiller("token", "list", "--all", "--database", database_url)
    assert "revoked" in listed.stdout
