"""The root typer application; each module registers its commands on it."""

from __future__ import annotations

import os
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


@app.callback()
def _global_options(
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
    if log_format not in ("json", "text"):
        raise typer.BadParameter("must be json or text", param_hint="--log-format")
    # Read by every process this command starts (server and worker processes too).
    os.environ["BACKFILLER_LOG_FORMAT"] = log_format
    if otlp_endpoint:
        os.environ["BACKFILLER_OTLP_ENDPOINT"] = otlp_endpoint


app.add_typer(schema_app, name="schema")


def main() -> None:
    # Importing registers the commands.
    from backfiller.cli import (
        client,  # noqa: F401
        daemon,  # noqa: F401
        server,  # noqa: F401
        tokens,  # noqa: F401
    )

    app()
