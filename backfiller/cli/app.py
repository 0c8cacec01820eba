"""The root typer application; each module registers its commands on it."""

from __future__ import annotations

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


def main() -> None:
    # Importing registers the commands.
    from backfiller.cli import (
        client,  # noqa: F401
        daemon,  # noqa: F401
        server,  # noqa: F401
        tokens,  # noqa: F401
        worker,  # noqa: F401
    )

    app()
