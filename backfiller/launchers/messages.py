"""The pipe protocol between the local launcher and its worker processes: typed messages.

Launcher to worker: a :class:`~backfiller.launchers.base.RunTask` to run, or :class:`Stop`.
Worker to launcher: :class:`Ready` once the definitions are loaded (or :class:`Fatal` if they
cannot be), :class:`Logs` while a run logs, :class:`Done` when it ends. ``Done`` carries the run's
end as :class:`~backfiller.launchers.base.RunFinished`, the one representation of a run's end
from the worker to storage.
"""

from __future__ import annotations

from dataclasses import dataclass

from backfiller.launchers.base import LogLine, RunFinished


@dataclass(frozen=True, slots=True)
class Stop:
    """Launcher to worker: finish and exit."""


@dataclass(frozen=True, slots=True)
class Ready:
    """Worker to launcher: definitions loaded, ready for runs; ``name`` is host:pid."""

    name: str


@dataclass(frozen=True, slots=True)
class Fatal:
    """Worker to launcher: the worker cannot start (the definitions do not load)."""

    message: str


@dataclass(frozen=True, slots=True)
class Logs:
    """Worker to launcher: log lines of the running run."""

    run_id: int
    lines: tuple[LogLine, ...]


@dataclass(frozen=True, slots=True)
class Done:
    """Worker to launcher: the run ended, with its last log lines."""

    end: RunFinished
    lines: tuple[LogLine, ...] = ()


WorkerMessage = Ready | Fatal | Logs | Done
