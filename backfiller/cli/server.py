"""Server-side commands: serve, dev, db upgrade, schema export."""

from __future__ import annotations

import asyncio
import logging
import sys
from pathlib import Path
from typing import Annotated

import typer

from backfiller.cli.app import app, db_app, schema_app
from backfiller.config import Settings
from backfiller.definitions.loading import Definitions, DefinitionsError, load_definitions

EXIT_CONFIG = 2
EXAMPLE_DEFINITIONS = "backfiller.examples.quickstart:definitions"

DefinitionsOption = Annotated[
    str | None,
    typer.Option(
        "--definitions",
        "-d",
        envvar="BACKFILLER_DEFINITIONS",
        help="Your definitions, as module:attribute.",
    ),
]
DatabaseOption = Annotated[
    str | None,
    typer.Option(
        "--database",
        envvar="BACKFILLER_DATABASE_URL",
        help="sqlite:///path.db or postgresql+psycopg://user@host/db "
        "(default: SQLite under ./.backfiller/).",
    ),
]
HostOption = Annotated[str, typer.Option("--host", help="Address to bind.")]
PortOption = Annotated[int, typer.Option("--port", help="Port to bind.")]


def fail(message: str, code: int = EXIT_CONFIG) -> typer.Exit:
    typer.echo(f"error: {message}", err=True)
    return typer.Exit(code)


def definitions_or_exit(target: str) -> Definitions:
    if str(Path.cwd()) not in sys.path:
        sys.path.insert(0, str(Path.cwd()))
    try:
        return load_definitions(target)
    except DefinitionsError as exc:
        raise fail(f"cannot load definitions: {exc}") from None


def prepare_database(url: str | None) -> str:
    """Upgrade the embedded SQLite database; refuse an out-of-date PostgreSQL one."""
    from backfiller.storage.engine import normalize_database_url
    from backfiller.storage.migrations import current_revision, head_revision, upgrade_database

    try:
        normalized = normalize_database_url(url)
    except Exception as exc:
        raise fail(f"bad database URL: {exc}") from None
    try:
        if normalized.startswith("sqlite"):
            upgrade_database(normalized)
        else:
            current = current_revision(normalized)
            if current != head_revision():
                raise fail(
                    f"the database is at revision {current or 'none'}, this release needs "
                    f"{head_revision()}: run `backfiller db upgrade --database ...` first"
                )
    except typer.Exit:
        raise
    except Exception as exc:
        raise fail(f"cannot use the database: {type(exc).__name__}: {exc}") from None
    return normalized


def configure_logging(level: str = "INFO") -> None:
    logging.basicConfig(
        level=level,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
        stream=sys.stderr,
    )


@app.command()
def serve(
    definitions: DefinitionsOption = None,
    database: DatabaseOption = None,
    host: HostOption = "127.0.0.1",
    port: PortOption = 8000,
) -> None:
    """Serve the public API (and the UI) over HTTP."""
    configure_logging()
    target = definitions or EXAMPLE_DEFINITIONS
    defs = definitions_or_exit(target)
    url = prepare_database(database)
    settings = Settings.from_env(database_url=url, definitions=target, host=host, port=port)
    asyncio.run(run_server(defs, settings))


async def run_server(defs: Definitions, settings: Settings) -> None:
    import uvicorn

    from backfiller.resolvers.context import Services
    from backfiller.storage import Database
    from backfiller.web.app import create_app

    services = Services(
        database=Database(settings.database_url), definitions=defs, settings=settings
    )
    config = uvicorn.Config(
        create_app(services),
        host=settings.host,
        port=settings.port,
        log_level="warning",
        lifespan="on",
        ws="websockets-sansio",
    )
    server = uvicorn.Server(config)
    base = f"http://{settings.host}:{settings.port}"
    typer.echo(f"Backfiller API at {base}/graphql/v1 (UI at {base}/)", err=True)
    await server.serve()


@db_app.command("upgrade")
def db_upgrade(database: DatabaseOption = None) -> None:
    """Migrate the database to this release's schema."""
    from backfiller.storage.migrations import current_revision, upgrade_database

    try:
        upgrade_database(database or "")
        typer.echo(f"database at revision {current_revision(database or '')}")
    except Exception as exc:
        raise fail(f"cannot upgrade the database: {type(exc).__name__}: {exc}") from None


@schema_app.command("export")
def schema_export(
    output: Annotated[
        Path | None, typer.Option("--output", "-o", help="Write here instead of stdout.")
    ] = None,
) -> None:
    """Print the public GraphQL schema (SDL) of this release."""
    from backfiller.api import schema

    text = schema.as_str() + "\n"
    if output is None:
        sys.stdout.write(text)
    else:
        output.write_text(text)
