"""The root of the ``backfiller`` command.

This distribution owns the command. Its client commands are always there; the server's
(``serve``, ``daemon``, ``dev``, ``db``, ``schema``, ``token``) are added when the server is
installed (the ``backfiller`` distribution), and otherwise answer with how to install it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Annotated

import typer

app = typer.Typer(
    name="backfiller",
    help="Launch, run and watch backfills. The client's options (--url, --token-file, "
    "--output/-o) may also come before the command: backfiller --url URL jobs.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
    context_settings={"help_option_names": ["-h", "--help"]},
)

# The server's commands and groups, for the message of a client-only installation.
SERVER_COMMANDS = ("serve", "daemon", "dev", "worker", "db", "schema", "token")
EXIT_NOT_INSTALLED = 2


def _print_version(value: bool) -> None:
    if value:
        from backfiller_client._version import __version__

        typer.echo(f"backfiller {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    version: Annotated[
        bool,
        typer.Option(
            "--version", callback=_print_version, is_eager=True, help="Print the version and exit."
        ),
    ] = False,
) -> None:
    """Launch, run and watch backfills."""


def register_client_commands() -> None:
    """Import the client command modules (importing one registers its commands)."""
    from backfiller_client.cli import (  # noqa: F401
        assets,
        backfills,
        jobs,
        marks,
        partitions,
        show,
        triggers,
    )


def _not_installed(name: str) -> None:
    @app.command(
        name,
        help="(Needs the server: not installed.)",
        rich_help_panel="Server (not installed)",
        context_settings={"allow_extra_args": True, "ignore_unknown_options": True},
        add_help_option=False,
    )
    def command(ctx: typer.Context) -> None:
        typer.echo(
            f"error: `backfiller {name}` is a server command, and this installation has the "
            "client only (backfiller-client). Install the server with `pip install "
            "backfiller` (or `uv pip install backfiller`), or talk to a running server with "
            "the client commands (`backfiller --help`).",
            err=True,
        )
        raise typer.Exit(EXIT_NOT_INSTALLED)


def register_server_commands(argv: Sequence[str] | None = None) -> None:
    """The server's commands when it is installed, else a clear message for each; and the
    client's (the server leaves them out when ``argv`` runs one of its commands)."""
    try:
        from backfiller.cli.app import register_commands
    except ModuleNotFoundError as exc:
        if exc.name not in ("backfiller", "backfiller.cli", "backfiller.cli.app"):
            raise  # the server is there but broken: say so
        register_client_commands()
        for name in SERVER_COMMANDS:
            _not_installed(name)
        return
    register_commands(argv)


def main() -> None:
    """The command (``backfiller_client.cli.entry``, which loads only what a command needs)."""
    from backfiller_client.cli.entry import main as run

    run()
