"""Server-side commands: serve, dev, schema export (``db`` is ``cli/database.py``)."""

from __future__ import annotations

import logging
import os
import sys
from dataclasses import replace
from pathlib import Path
from typing import Annotated

import typer

from backfiller.cli.app import app, schema_app
from backfiller.cli.oidc_options import (
    OidcClientIdOption,
    OidcDefaultRoleOption,
    OidcIssuerOption,
    OidcRoleClaimOption,
    OidcRoleOption,
    OidcScopeClaimOption,
    OidcScopesOption,
    OidcSecretFileOption,
    OidcSessionHoursOption,
    OidcTeamClaimOption,
    oidc_settings,
)
from backfiller.config import AuthMode, Settings
from backfiller.definitions.loading import Definitions, DefinitionsError, load_definitions
from backfiller.logs import announce
from backfiller.logs import configure_logging as configure_logging  # cli/daemon.py uses it
from backfiller.web.serving import api_line, exec_server, serve_metrics_port, uvicorn_config

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
AuthOption = Annotated[
    str,
    typer.Option(
        "--auth",
        envvar="BACKFILLER_AUTH",
        help="token: every API request needs `Authorization: Bearer <token>` (create tokens "
        "with `backfiller token create`); none: no authentication, allowed only on a "
        "loopback address.",
    ),
]
InsecureNoAuthOption = Annotated[
    bool,
    typer.Option(
        "--insecure-no-auth",
        help="Allow --auth none on a non-loopback address: anyone who can reach the port "
        "can launch and cancel backfills.",
    ),
]
CorsOriginOption = Annotated[
    list[str] | None,
    typer.Option(
        "--cors-origin",
        help="A browser origin (https://host:port) allowed to call the API from its pages; "
        "repeat for more. None by default.",
    ),
]
AllowedHostOption = Annotated[
    list[str] | None,
    typer.Option(
        "--allowed-host",
        help="A host name the server answers to, besides loopback ones (guards against DNS "
        "rebinding); repeat for more. Without it, --auth token answers any host.",
    ),
]
MaxPartitionsOption = Annotated[
    int | None,
    typer.Option(
        "--max-partitions-per-backfill",
        help="Refuse backfills over more partitions than this (RANGE_TOO_LARGE).",
    ),
]
RateLimitOption = Annotated[
    int | None,
    typer.Option(
        "--rate-limit",
        help="Launches (and, apart, trigger evaluations) a token may make per minute; "
        "0 for no limit. Per server process.",
    ),
]
OperationsPerTokenOption = Annotated[
    int | None,
    typer.Option(
        "--max-operations-per-token",
        envvar="BACKFILLER_MAX_OPERATIONS_PER_TOKEN",
        help="Operations (subscriptions included) a token may have in flight over all its "
        "WebSockets to one server process (default 100; 0 for no limit).",
    ),
]
OperationsPerSocketOption = Annotated[
    int | None,
    typer.Option(
        "--max-operations-per-socket",
        envvar="BACKFILLER_MAX_OPERATIONS_PER_SOCKET",
        help="Operations (subscriptions included) one WebSocket may have in flight "
        "(default 25; 0 for no limit).",
    ),
]
MetricsPortOption = Annotated[
    int | None,
    typer.Option(
        "--metrics-port",
        envvar="BACKFILLER_METRICS_PORT",
        help="Also serve /metrics (without a token), /healthz and /readyz on this port of "
        "--metrics-host.",
    ),
]
MetricsHostOption = Annotated[
    str,
    typer.Option("--metrics-host", help="Address of --metrics-port (loopback by default)."),
]
WorkersOption = Annotated[
    int,
    typer.Option(
        "--workers",
        envvar="BACKFILLER_WORKERS",
        help="Server processes sharing the port (each with its own rate limit and caches).",
    ),
]


def fail(message: str, code: int = EXIT_CONFIG) -> typer.Exit:
    """``error: message`` on stderr (a log line with ``--log-format json``), and the exit."""
    announce(message, logging.ERROR)
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


@app.command()
def serve(  # long: one parameter per option of the command
    definitions: DefinitionsOption = None,
    database: DatabaseOption = None,
    host: HostOption = "127.0.0.1",
    port: PortOption = 8000,
    auth: AuthOption = "token",
    insecure_no_auth: InsecureNoAuthOption = False,
    cors_origin: CorsOriginOption = None,
    max_partitions_per_backfill: MaxPartitionsOption = None,
    rate_limit: RateLimitOption = None,
    workers: WorkersOption = 1,
    allowed_host: AllowedHostOption = None,
    metrics_port: MetricsPortOption = None,
    metrics_host: MetricsHostOption = "127.0.0.1",
    max_operations_per_token: OperationsPerTokenOption = None,
    max_operations_per_socket: OperationsPerSocketOption = None,
    oidc_issuer: OidcIssuerOption = None,
    oidc_client_id: OidcClientIdOption = None,
    oidc_client_secret_file: OidcSecretFileOption = None,
    oidc_scopes: OidcScopesOption = "openid profile email",
    oidc_role_claim: OidcRoleClaimOption = "groups",
    oidc_role: OidcRoleOption = None,
    oidc_default_role: OidcDefaultRoleOption = None,
    oidc_team_claim: OidcTeamClaimOption = None,
    oidc_scope_claim: OidcScopeClaimOption = None,
    oidc_session_hours: OidcSessionHoursOption = 8.0,
) -> None:
    """Serve the public API (and the UI) over HTTP."""
    configure_logging()
    try:
        auth_mode = AuthMode(auth)
    except ValueError:
        raise fail(f"--auth must be 'token' or 'none', not {auth!r}") from None
    settings = Settings.from_env(
        host=host,
        port=port,
        auth_mode=auth_mode,
        insecure_no_auth=insecure_no_auth,
        cors_origins=tuple(cors_origin) if cors_origin else None,
        allowed_hosts=tuple(allowed_host) if allowed_host else None,
        max_partitions_per_backfill=max_partitions_per_backfill,
        launch_rate_limit=rate_limit,
        metrics_port=metrics_port,
        metrics_host=metrics_host,
        max_operations_per_token=max_operations_per_token,
        max_operations_per_socket=max_operations_per_socket,
        **oidc_settings(
            oidc_issuer,
            oidc_client_id,
            oidc_client_secret_file,
            oidc_scopes,
            oidc_role_claim,
            oidc_role,
            oidc_default_role,
            oidc_team_claim,
            oidc_scope_claim,
            oidc_session_hours,
        ),
    )
    check_access_settings(settings)
    target = definitions or EXAMPLE_DEFINITIONS
    defs = definitions_or_exit(target)
    url = prepare_database(database)
    settings = replace(settings, database_url=url, definitions=target)
    if workers < 1:
        raise fail("--workers must be at least 1")
    del defs  # loaded to fail here, with the command's message; the server loads its own
    if workers == 1:
        exec_server(settings)  # see web/serving.py: the server keeps no CLI library
    else:
        serve_workers(settings, workers)


def check_access_settings(settings: Settings) -> None:
    """Refuse to start with settings that would expose the API to anyone."""
    from backfiller.web.binding import is_loopback

    if settings.auth_mode is AuthMode.NONE and not is_loopback(settings.host):
        if not settings.insecure_no_auth:
            raise fail(
                f"refusing to serve without authentication on {settings.host}, which other "
                "machines can reach: use --auth token (and `backfiller token create`), bind "
                "127.0.0.1, or pass --insecure-no-auth if you really mean it"
            )
        announce(
            f"serving WITHOUT authentication on {settings.host}: anyone who reaches it is an admin",
            logging.WARNING,
        )
    for origin in settings.cors_origins:
        if origin == "*" or not origin.startswith(("http://", "https://")):
            raise fail(f"--cors-origin takes an origin like https://host:port, not {origin!r}")
    if settings.max_partitions_per_backfill < 1:
        raise fail("--max-partitions-per-backfill must be at least 1")
    if settings.launch_rate_limit < 0:
        raise fail("--rate-limit must be 0 (no limit) or more")
    if settings.max_operations_per_token < 0:
        raise fail("--max-operations-per-token must be 0 (no limit) or more")
    if settings.max_operations_per_socket < 0:
        raise fail("--max-operations-per-socket must be 0 (no limit) or more")
    from backfiller.web.oidc_claims import oidc_config

    try:
        oidc_config(settings)
    except ValueError as error:
        raise fail(str(error)) from None


def serve_workers(settings: Settings, workers: int) -> None:
    """Serve with several uvicorn worker processes on one socket."""
    from uvicorn.supervisors import Multiprocess

    from backfiller.web.workers import FACTORY, SETTINGS_VARIABLE, settings_to_environment

    os.environ[SETTINGS_VARIABLE] = settings_to_environment(settings)
    from backfiller.observability.exposition import prepare_multiprocess

    prepare_multiprocess()  # the processes record into files that any of them renders
    serve_metrics_port(settings)
    config = uvicorn_config(FACTORY, settings, factory=True, workers=workers)
    announce(f"{api_line(settings)}, {workers} worker processes", verbatim=True)
    Multiprocess(config, sockets=[config.bind_socket()]).run()


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
