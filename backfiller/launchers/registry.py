"""Which launchers a daemon may use: the built-in ones, and plugins of other distributions.

A launcher plugin is an object with a ``name``, a ``problem`` check of the daemon's options, a
``build`` that makes the launcher, and a ``describe`` line for the daemon to print once
started. The built-in plugins are ``local`` and ``celery``; another distribution adds one with
an entry point in the group ``backfiller.launchers`` naming such an object (see
``docs/launchers.md``). ``backfiller daemon --launcher NAME`` picks one by name.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from importlib.metadata import entry_points
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from backfiller.definitions.loading import Definitions
    from backfiller.launchers.base import Launcher

logger = logging.getLogger("backfiller.launcher")

ENTRY_POINTS = "backfiller.launchers"


@dataclass(frozen=True)
class LauncherConfig:
    """What a daemon knows that a launcher may need (each plugin takes its part)."""

    definitions_target: str
    """The definitions as ``module:attribute`` (what worker processes import)."""
    definitions: Definitions | None = None
    database_url: str | None = None
    workers: int | None = None
    max_runs: int | None = None
    grace_seconds: float = 5.0
    api_url: str | None = None
    token: str | None = None
    results_dir: str | None = None
    broker: str | None = None
    broker_key_file: str | None = None
    """Where the key shared by daemons and workers is (else ``$BACKFILLER_BROKER_KEY``)."""
    insecure_broker: bool = False
    """No key: messages through the broker unsigned (local experiments only)."""
    heartbeat_timeout: float = 20.0
    runs_per_task: int = 8


class LauncherPlugin(Protocol):
    """How the daemon's command line makes a launcher (see the module's docstring)."""

    name: str

    def problem(self, config: LauncherConfig) -> str | None:
        """What is wrong with ``config`` for this launcher, in one line (None: nothing)."""
        ...

    def build(self, config: LauncherConfig) -> Launcher:
        """The launcher, started."""
        ...

    def describe(self, owner: str, config: LauncherConfig) -> str:
        """The line a daemon prints once started: where its runs go."""
        ...


def launcher_plugins() -> dict[str, LauncherPlugin]:
    """The launchers a daemon may use, by name: the built-in ones first, then those of the
    installed distributions' entry points (a plugin that fails to load is logged and left
    out)."""
    from backfiller.launchers.celery import CELERY
    from backfiller.launchers.local import LOCAL

    found: dict[str, LauncherPlugin] = {LOCAL.name: LOCAL, CELERY.name: CELERY}
    for point in entry_points(group=ENTRY_POINTS):
        if point.name in found:
            continue
        try:
            found[point.name] = point.load()
        except Exception:
            logger.exception("cannot load the launcher plugin %r (%s)", point.name, point.value)
    return found
