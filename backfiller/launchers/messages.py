"""The pipe protocol between the local launcher and its worker processes: typed messages.

Launcher to worker: a :class:`~backfiller.launchers.base.RunTask` to run, a :class:`Gated` one
(run it only if the start gate, asked by the worker, says so), or :class:`Stop`.
Worker to launcher: :class:`Ready` once the definitions are loaded (or :class:`Fatal` if they
cannot be), :class:`Started` when a gated run passed its gate, :class:`Logs` while a run logs,
:class:`Done` when it ends (``NOT_STARTED`` for a gated run its gate refused). ``Done``
carries the run's end as :class:`~backfiller.launchers.base.RunFinished`, the one
representation of a run's end from the worker to storage.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from backfiller.launchers.base import LogLine, RunFinished, RunTask, StartCheck
from backfiller.pickled import by_position


@dataclass(frozen=True, slots=True)
class Stop:
    """Launcher to worker: finish and exit."""


@by_position
@dataclass(frozen=True, slots=True)
class Gated:
    """Launcher to worker: run ``task`` if the start gate, asked with ``check``, lets it."""

    task: RunTask
    check: StartCheck


@by_position
@dataclass(frozen=True, slots=True)
class Started:
    """Worker to launcher: the gated run passed its gate at ``at`` and is starting."""

    run_id: int
    at: datetime
    attempt: int


@dataclass(frozen=True, slots=True)
class Ready:
    """Worker to launcher: definitions loaded, ready for runs; ``name`` is host:pid."""

    name: str


@dataclass(frozen=True, slots=True)
class Fatal:
    """Worker to launcher: the worker cannot start (the definitions do not load)."""

    message: str


@by_position
@dataclass(frozen=True, slots=True)
class Logs:
    """Worker to launcher: log lines of the running run."""

    run_id: int
    lines: tuple[LogLine, ...]


@by_position
@dataclass(frozen=True, slots=True)
class Done:
    """Worker to launcher: the run ended, with its last log lines."""

    end: RunFinished
    lines: tuple[LogLine, ...] = ()


WorkerMessage = Ready | Fatal | Started | Logs | Done
"""What a worker sends its launcher."""
LauncherMessage = RunTask | Gated | Stop
"""What a launcher sends a worker."""
