"""Launchers: what starts runs. ``local`` keeps a pool of persistent worker processes,
``celery`` runs on Celery workers; others come as plugins (``registry``).

A launcher never touches the database: the daemon hands it :class:`RunTask` values and reads
back :class:`LauncherEvent` values, and writes them with fencing (expected status and lease).
The core protocol is :class:`Launcher`; :class:`LeasedLauncher` and :class:`DurableResults`
are capabilities the daemon checks for (see ``docs/launchers.md``).
"""

from backfiller.launchers.base import (
    DurableResults,
    Launcher,
    LauncherEvent,
    LeasedLauncher,
    LogLine,
    Outcome,
    RunFinished,
    RunStarted,
    RunTask,
)
from backfiller.launchers.inline import InlineLauncher
from backfiller.launchers.local import LocalLauncher
from backfiller.launchers.registry import LauncherConfig, LauncherPlugin, launcher_plugins

__all__ = [
    "DurableResults",
    "InlineLauncher",
    "Launcher",
    "LauncherConfig",
    "LauncherEvent",
    "LauncherPlugin",
    "LeasedLauncher",
    "LocalLauncher",
    "LogLine",
    "Outcome",
    "RunFinished",
    "RunStarted",
    "RunTask",
    "launcher_plugins",
]
