"""Launchers: what starts runs. ``local`` keeps a pool of persistent worker processes.

A launcher never touches the database: the daemon hands it :class:`RunTask` values and reads
back :class:`LauncherEvent` values, and writes them with fencing (expected status and lease).
"""

from backfiller.launchers.base import (
    Launcher,
    LauncherEvent,
    LogLine,
    Outcome,
    RunFinished,
    RunStarted,
    RunTask,
)
from backfiller.launchers.inline import InlineLauncher
from backfiller.launchers.local import LocalLauncher

__all__ = [
    "InlineLauncher",
    "Launcher",
    "LauncherEvent",
    "LocalLauncher",
    "LogLine",
    "Outcome",
    "RunFinished",
    "RunStarted",
    "RunTask",
]
