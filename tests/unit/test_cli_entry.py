"""The ``backfiller`` command line as people type it: the client's options before the
command too, ``-h``, the token from a file (and a warning for one on the command line), and
only what a command needs loaded (``backfiller_client.cli.entry``)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import typer

from backfiller_client.cli import app as root
from backfiller_client.cli.backfills import nothing_to_run
from backfiller_client.cli.entry import (
    CLIENT_COMMANDS,
    TOKEN_WARNING,
    UsageError,
    command_of,
    prepared,
)
from backfiller_client.types import Preview, SkippedPartition
from tests.support import free_port


def test_the_client_commands_are_the_ones_the_client_registers() -> None:
    root.register_client_commands()
    group = typer.main.get_group(root.app)
    client = {
        name
        for name, command in group.commands.items()
        if name not in root.SERVER_COMMANDS and name not in ("db", "schema", "worker", "token")
    }
    assert client == set(CLIENT_COMMANDS)


@pytest.mark.parametrize("module", sorted(set(CLIENT_COMMANDS.values())))
def test_each_client_command_is_registered_by_its_own_module(module: str) -> None:
    code = (
        "import importlib, json, sys, typer\n"
        "from backfiller_client.cli.app import app\n"
        f"importlib.import_module('backfiller_client.cli.{module}')\n"
        "print(json.dumps(sorted(typer.main.get_group(app).commands)))\n"
        "print(any(m.startswith('backfiller.') for m in sys.modules))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    registered, server_loaded = done.stdout.splitlines()
    mine = {name for name, of in CLIENT_COMMANDS.items() if of == module}
    assert mine <= set(json.loads(registered))
    assert server_loaded == "False"


@pytest.mark.parametrize(
    ("given", "command_line"),
    [
        (["--url", "http://h:1", "jobs"], ["jobs", "--url", "http://h:1"]),
        (["-o", "json", "list", "--all"], ["list", "--all", "-o", "json"]),
        (["--output=json", "show", "bf_1"], ["show", "bf_1", "--output=json"]),
        (
            ["--log-format", "json", "--url", "u", "assets", "show", "a"],
            ["--log-format", "json", "assets", "show", "a", "--url", "u"],
        ),
        (["jobs", "--url", "u"], ["jobs", "--url", "u"]),
        (["--help"], ["--help"]),
        (["-o", "json"], ["-o", "json"]),  # no command: the root says so
    ],
)
def test_client_options_before_the_command_go_behind_it(
    given: list[str], command_line: list[str]
) -> None:
    assert prepared(given) == (command_line, {}, [])


def test_a_token_file_is_read_and_a_token_on_the_command_line_warned_about(
    tmp_path: Path,
) -> None:
    token = tmp_path / "token"
    token.write_text("bft_secret\n")
    assert prepared(["--token-file", str(token), "jobs"]) == (
        ["jobs"],
        {"BACKFILLER_TOKEN": "bft_secret"},
        [],
    )
    assert prepared(["jobs", f"--token-file={token}"])[1] == {"BACKFILLER_TOKEN": "bft_secret"}
    assert prepared(["jobs", "--token", "bft_x"]) == (
        ["jobs", "--token", "bft_x"],
        {},
        [TOKEN_WARNING],
    )
    with pytest.raises(UsageError, match="cannot read the token file"):
        prepared(["jobs", "--token-file", str(tmp_path / "missing")])
    (tmp_path / "empty").write_text("\n")
    with pytest.raises(UsageError, match="is empty"):
        prepared(["jobs", "--token-file", str(tmp_path / "empty")])
    with pytest.raises(UsageError, match="needs a value"):
        prepared(["--url"])


def test_the_command_of_a_command_line() -> None:
    assert command_of(["--log-format", "json", "serve"]) == "serve"
    assert command_of(["jobs", "--url", "u"]) == "jobs"
    assert command_of(["--help"]) is None


def entry(*argv: str) -> subprocess.CompletedProcess[str]:
    code = "from backfiller_client.cli.entry import main; main()"
    return subprocess.run(
        [sys.executable, "-c", code, *argv], capture_output=True, text=True, timeout=120
    )


def test_as_typed_options_first_help_short_and_version_alone() -> None:
    nowhere = f"http://127.0.0.1:{free_port()}"
    done = entry("--url", nowhere, "-o", "json", "jobs")
    assert done.returncode == 3, done.stderr
    assert json.loads(done.stdout)["error"]["kind"] == "connection"
    helped = entry("-h")
    assert helped.returncode == 0 and "Launch, run and watch backfills" in helped.stdout
    assert entry("jobs", "-h").stdout == entry("jobs", "--help").stdout
    version = entry("--version")
    assert version.returncode == 0 and version.stdout.startswith("backfiller ")


def test_a_launch_that_runs_nothing_says_why() -> None:
    found = Preview(
        job="daily_sales",
        total=31,
        runs=0,
        skipped=31,
        first_partitions=(),
        skipped_partitions=(
            SkippedPartition("2024-01-01", "ALREADY_SUCCEEDED"),
            SkippedPartition("2024-01-02", "ALREADY_SUCCEEDED"),
        ),
    )
    assert nothing_to_run(found) == (
        "31 skipped: already succeeded; use --reprocess all to run them again"
    )
    assert nothing_to_run(Preview("j", 2, 1, 1, ("a",), ())) is None
