"""The server's part of the ``backfiller`` command.

The command's root, and its client commands, belong to the client distribution
(``backfiller_client.cli``); the server adds its groups and commands to that root.
"""

from __future__ import annotations

import importlib
import os
from collections.abc import Sequence
from typing import Annotated

import typer

from backfiller.collector import starting
from backfiller_client.cli.app import (
    _print_version,
    app,
    main,
    register_client_commands,
)

db_app = typer.Typer(help="Manage the database.", no_args_is_help=True)
schema_app = typer.Typer(help="The public GraphQL schema.", no_args_is_help=True)
app.add_typer(db_app, name="db")


@app.callback()
def _global_options(
    version: Annotated[
        bool,
        typer.Option(
            "--version", callback=_print_version, is_eager=True, help="Print the version and exit."
        ),
    ] = False,
    log_format: Annotated[
        str,
        typer.Option(
            "--log-format",
            envvar="BACKFILLER_LOG_FORMAT",
            help="Log lines as json (one object per line) or text, for every command.",
        ),
    ] = "text",
    otlp_endpoint: Annotated[
        str | None,
        typer.Option(
            "--otlp-endpoint",
            envvar="BACKFILLER_OTLP_ENDPOINT",
            help="Send OpenTelemetry traces to this OTLP/HTTP collector (needs the `tracing` "
            "extra). Off by default.",
        ),
    ] = None,
) -> None:
    """Launch, run and watch backfills."""
    # This callback replaces the client's root callback (one per typer app): it keeps
    # --version and adds the options of the server's processes.
    if log_format not in ("json", "text"):
        raise typer.BadParameter("must be json or text", param_hint="--log-format")
    # Read by every process this command starts (server and worker processes too).
    os.environ["BACKFILLER_LOG_FORMAT"] = log_format
    if otlp_endpoint:
        os.environ["BACKFILLER_OTLP_ENDPOINT"] = otlp_endpoint


app.add_typer(schema_app, name="schema")


# The root options that take a value: the word after one is not the command's name.
_ROOT_OPTIONS_WITH_VALUE = frozenset({"--log-format", "--otlp-endpoint"})


def command_of(argv: Sequence[str]) -> str | None:
    """The command a command line runs: its first word that is not an option or an option's
    value (None for ``backfiller --help``)."""
    words = iter(argv)
    for word in words:
        if word in _ROOT_OPTIONS_WITH_VALUE:
            next(words, None)
        elif not word.startswith("-"):
            return word
    return None


# The module that defines each server command: importing it registers its commands.
_MODULE_OF_COMMAND = {
    "serve": "server",
    "db": "database",
    "schema": "server",
    "worker": "worker",
    "daemon": "daemon",
    "dev": "daemon",
    "token": "tokens",
}


def register_commands(argv: Sequence[str] | None = None) -> None:
    """Import the command modules (importing one registers its commands): the server's, and
    the client's unless ``argv`` runs a server command.

    A server command registers only its own module (and what that module imports): ``serve``
    never uses the client's commands, which bring httpx and rich, nor the daemon's and the
    worker's, which bring the launchers. Leaving them out keeps an idle server process small.
    """
    starting()  # a server-side command may become a long-running process (collector.py)
    command = None if argv is None else command_of(argv)
    if command in _MODULE_OF_COMMAND:
        importlib.import_module(f"backfiller.cli.{_MODULE_OF_COMMAND[command]}")
        return
    register_client_commands()
    from backfiller.cli import (  # noqa: F401
        daemon,
        database,
        server,
        tokens,
        worker,
    )


__all__ = ["app", "db_app", "main", "register_commands", "schema_app"]
