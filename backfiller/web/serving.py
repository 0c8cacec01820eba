"""The API's server process: uvicorn serving the web application for a command's settings.

``backfiller serve`` checks its options and prepares the database, then replaces its own
process with ``python -m backfiller.web.serving`` (:func:`exec_server`): the settings travel
as JSON in the environment, as they do to ``serve --workers N``'s processes. The process that
then serves, for as long as it runs, holds only what serving needs: not the command line's
libraries (typer validates every option through pydantic: about 8 MB that an idle server would
otherwise keep). ``backfiller dev`` serves in its own process (:func:`http_server`), beside
its daemon.
"""

from __future__ import annotations

import os
import sys
from typing import TYPE_CHECKING, Any

from backfiller.config import Settings
from backfiller.web.workers import SETTINGS_VARIABLE, settings_to_environment

SERVER_MODULE = "backfiller.web.serving"

if TYPE_CHECKING:
    import uvicorn

    from backfiller.definitions.loading import Definitions


def uvicorn_config(app: Any, settings: Settings, **options: Any) -> uvicorn.Config:
    """uvicorn's configuration of every server process (one, or each of ``--workers N``)."""
    import uvicorn

    from backfiller.logs import json_logs
    from backfiller.web.protocol import PROTOCOL

    if json_logs():  # uvicorn's loggers then go through the root's JSON lines, not its own
        options.setdefault("log_config", None)
    return uvicorn.Config(
        app,
        host=settings.host,
        port=settings.port,
        log_level="warning",
        access_log=False,  # the application logs each request (backfiller.access)
        lifespan="on",
        ws="websockets-sansio",
        ws_max_size=settings.max_body_bytes,  # a WebSocket message is capped like a body
        http=PROTOCOL,  # slow clients are cut off (web/protocol.py)
        **options,
    )


def http_server(definitions: Definitions, settings: Settings) -> uvicorn.Server:
    """A uvicorn server of the whole web application (API, REST, UI) for these settings."""
    import uvicorn

    from backfiller.resolvers.context import Services
    from backfiller.storage import Database
    from backfiller.web.app import create_app

    database = Database(settings.database_url, fast_paths=settings.fast_paths)
    services = Services(database=database, definitions=definitions, settings=settings)
    return uvicorn.Server(uvicorn_config(create_app(services), settings))


def serve_metrics_port(settings: Settings) -> None:
    """``--metrics-port``: /metrics, /healthz and /readyz in a thread of this process."""
    if settings.metrics_port is None:
        return
    from urllib.parse import urlsplit

    from backfiller.web.metrics_port import start_endpoint

    names = [*settings.allowed_hosts, urlsplit(settings.public_url or "").netloc]
    start_endpoint(settings.metrics_host, settings.metrics_port, ready=None, names=names)


def api_line(settings: Settings) -> str:
    """What a server prints once it is about to serve."""
    base = f"http://{settings.host}:{settings.port}"
    return f"Backfiller API at {base}/graphql/v1 (UI at {base}/)"


async def serve(definitions: Definitions, settings: Settings) -> None:
    server = http_server(definitions, settings)
    from backfiller.collector import started
    from backfiller.logs import announce

    started()
    announce(api_line(settings), verbatim=True)
    serve_metrics_port(settings)
    await server.serve()


def exec_server(settings: Settings) -> None:
    """Replace this process with the server process of ``settings`` (it never returns).

    The process keeps its id, so whatever started ``backfiller serve`` (a terminal, systemd,
    a container) signals and waits for the server itself.
    """
    os.environ[SETTINGS_VARIABLE] = settings_to_environment(settings)
    sys.stdout.flush()
    sys.stderr.flush()
    os.execv(sys.executable, [sys.executable, "-m", SERVER_MODULE])


def main() -> None:
    """The server process (see the module's docstring)."""
    from backfiller.collector import starting

    starting()  # before the server's imports (collector.py)
    from backfiller.event_loop import run_service
    from backfiller.logs import configure_logging
    from backfiller.web.workers import definitions_and_settings_from_environment

    configure_logging()
    definitions, settings = definitions_and_settings_from_environment()
    run_service(serve(definitions, settings))


if __name__ == "__main__":
    main()
