"""The local launcher's results folder: what outlives a daemon on its machine.

Each run handed to the launcher gets a marker ``<run>.queued``, renamed ``<run>.started`` when
it goes to a worker process; the worker writes the run's end to ``<run>.json`` before it reports
it (:func:`~backfiller.launchers.worker.write_result`). A daemon taking over a dead daemon's
runs reads them here: the end a worker kept, or ``NOT_STARTED`` for a run that never reached a
worker (a ``queued`` marker, no ``started`` one). A run id names one attempt (each attempt is a
new run), so the folder is keyed by run, whatever daemon ran it.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterable
from pathlib import Path

from backfiller.clock import utc_now
from backfiller.launchers.base import LauncherEvent, Outcome, RunFinished, RunTask
from backfiller.launchers.worker import mark_started, marker_path, read_result, result_path

RESULTS_KEPT_SECONDS = 86_400.0


class ResultsFolder:
    """A results folder (made if missing; entries older than a day are swept at start)."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self.path.mkdir(parents=True, exist_ok=True)
        _sweep(self.path)

    def mark_queued(self, tasks: Iterable[RunTask]) -> None:
        for task in tasks:
            with contextlib.suppress(OSError):
                marker_path(self.path, task.run_id, "queued").touch()

    def mark_started(self, run_id: int) -> None:
        """``queued`` -> ``started``, before the run goes to its worker."""
        mark_started(self.path, run_id)

    def durable_results(self, run_ids: Iterable[int]) -> list[LauncherEvent]:
        """Ends kept by workers of this folder; ``NOT_STARTED`` for the runs a launcher of this
        folder held but never handed to a worker. A run this folder knows nothing of (another
        machine's) gets nothing."""
        found: list[LauncherEvent] = []
        for run_id in run_ids:
            end = read_result(result_path(self.path, run_id))
            if end is not None:
                found.append(end)
            elif (
                marker_path(self.path, run_id, "queued").exists()
                and not marker_path(self.path, run_id, "started").exists()
            ):
                found.append(
                    RunFinished(run_id, utc_now(), Outcome.NOT_STARTED, "taken back: never started")
                )
        return found

    def discard(self, run_ids: Iterable[int]) -> None:
        for run_id in run_ids:
            for path in (
                result_path(self.path, run_id),
                marker_path(self.path, run_id, "queued"),
                marker_path(self.path, run_id, "started"),
            ):
                with contextlib.suppress(OSError):
                    path.unlink()


def _sweep(folder: Path) -> None:
    """Delete results older than ``RESULTS_KEPT_SECONDS``: refused ones (a stale attempt) are
    never recorded, and a takeover happens within a lease, long before."""
    cutoff = time.time() - RESULTS_KEPT_SECONDS
    for path in folder.iterdir():
        with contextlib.suppress(OSError):
            if path.stat().st_mtime < cutoff:
                path.unlink()
