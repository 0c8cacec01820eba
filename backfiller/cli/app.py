"""The root typer application; each module registers its commands on it."""

from __future__ import annotations

from typing import Annotated

import typer

app = typer.Typer(
    name="backfiller",
    help="Launch, run and watch backfills.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
)
db_app = typer.Typer(help="Manage the database.", no_args_is_help=True)
schema_app = typer.Typer(help="The public GraphQL schema.", no_args_is_help=True)
app.add_typer(db_app, name="db")
app.add_typer(schema_app, name="schema")


def _print_version(value: bool) -> None:
    if value:
        from backfiller import __version__

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


def register_commands() -> None:
    """Import every command module (importing one registers its commands)."""
    from backfiller.cli import (  # noqa: F401
        backfills,
        daemon,
        jobs,
        partitions,
        server,
        tokens,
        triggers,
    )


def main() -> None:
    register_commands()
    app()
