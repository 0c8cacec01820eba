"""Several server processes on one port: the application each worker process builds.

``backfiller serve --workers N`` hands uvicorn an import string (uvicorn starts its workers
as new processes, which cannot receive live objects) and the settings the command resolved,
as JSON in ``BACKFILLER_WORKER_SETTINGS``. Each worker loads the definitions and opens the
database itself; they share nothing but the database. What is kept in memory is per process:
the launch rate limit and the caches of pinned selections and status ranges (keyed by
versions, so never stale).
"""

from __future__ import annotations

import dataclasses
import json
import os
import sys
from typing import TYPE_CHECKING, Any

from starlette.types import ASGIApp

from backfiller.config import Settings

if TYPE_CHECKING:
    from backfiller.definitions.loading import Definitions

SETTINGS_VARIABLE = "BACKFILLER_WORKER_SETTINGS"
FACTORY = "backfiller.web.workers:app_from_environment"


def settings_to_environment(settings: Settings) -> str:
    """The settings as the JSON a worker process reads back."""
    return json.dumps(dataclasses.asdict(settings))


def settings_from_environment() -> Settings:
    raw: dict[str, Any] = json.loads(os.environ[SETTINGS_VARIABLE])
    raw["cors_origins"] = tuple(raw.get("cors_origins") or ())
    raw["allowed_hosts"] = tuple(raw.get("allowed_hosts") or ())
    names = {f.name for f in dataclasses.fields(Settings)}
    return Settings(**{k: v for k, v in raw.items() if k in names})


def definitions_and_settings_from_environment() -> tuple[Definitions, Settings]:
    """The settings ``serve`` resolved, and the definitions they name, loaded again here."""
    from backfiller.definitions.loading import load_definitions

    if os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())  # definitions are found as `serve` found them
    settings = settings_from_environment()
    if settings.definitions is None:
        raise RuntimeError("the server process was started without definitions")
    return load_definitions(settings.definitions), settings


def app_from_environment() -> ASGIApp:
    """uvicorn's factory in each worker process."""
    from backfiller.logs import configure_logging
    from backfiller.resolvers.context import Services
    from backfiller.storage import Database
    from backfiller.web.app import create_app

    configure_logging()
    definitions, settings = definitions_and_settings_from_environment()
    services = Services(
        database=Database(settings.database_url, fast_paths=settings.fast_paths),
        definitions=definitions,
        settings=settings,
    )
    return create_app(services)
