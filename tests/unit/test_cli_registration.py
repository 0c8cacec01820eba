"""A server command registers only its own module: it still runs, and loads no other's."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from backfiller.cli.app import _MODULE_OF_COMMAND
from backfiller_client.cli.app import SERVER_COMMANDS

REGISTERED = """
import json, sys
import typer
from backfiller_client.cli.app import app, register_server_commands
register_server_commands(sys.argv[1:])
group = typer.main.get_command(app)
print(json.dumps({
    "commands": group.list_commands(typer.Context(group)),
    "modules": sorted(m for m in sys.modules if m.startswith("backfiller.")),
}))
"""


def registered_by(*argv: str) -> tuple[list[str], list[str]]:
    """The commands the command line ``argv`` registers, and the backfiller modules loaded."""
    done = subprocess.run(
        [sys.executable, "-c", REGISTERED, *argv], capture_output=True, text=True, check=True
    )
    found = json.loads(done.stdout)
    return found["commands"], found["modules"]


def test_every_server_command_has_its_module() -> None:
    assert set(_MODULE_OF_COMMAND) == set(SERVER_COMMANDS)


@pytest.mark.parametrize("command", SERVER_COMMANDS)
def test_a_server_command_registers_itself(command: str) -> None:
    commands, _ = registered_by("--log-format", "text", command, "--help")
    assert command in commands


def test_serve_loads_neither_the_launchers_nor_the_other_commands() -> None:
    commands, modules = registered_by("serve", "--port", "8000")
    assert set(commands) == {"serve", "db", "schema"}
    assert not [m for m in modules if m.startswith("backfiller.launchers")]
    loaded_cli = {m for m in modules if m.startswith("backfiller.cli.")}
    assert loaded_cli == {
        "backfiller.cli.app",
        "backfiller.cli.oidc_options",  # serve's options of single sign-on
        "backfiller.cli.server",
    }


def test_the_help_and_client_commands_register_every_command() -> None:
    for argv in ([], ["--help"], ["launch", "--help"]):
        commands, _ = registered_by(*argv)
        assert set(SERVER_COMMANDS) <= set(commands)
        assert "launch" in commands
