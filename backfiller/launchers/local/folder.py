"""The local launcher's results folder: what outlives a daemon on its machine.

Each process appends to journal segments of its own (``launchers.worker.Journal``): the
launcher records each run it holds (``q <run>``), a worker each run that passed its gate
(``s <run>``) and each run's end (``e <run> <JSON>``) before it reports it. A daemon taking over
a dead daemon's runs reads them here: the end a worker kept, or ``NOT_STARTED`` for a run that
never reached a worker (held, not started). A run id names one attempt (each attempt is a new
run), so the folder is keyed by run, whatever daemon ran it.

Once the daemon has written runs' ends (:meth:`ResultsFolder.discard`), a segment none of whose
runs is still unwritten is deleted, unless a live process still appends to it: a segment is
renamed ``.closed`` when its writer is done with it, and one left ``.journal`` by a process
that died goes too. What stays (a stale attempt's end, never written) is swept after a
day. Folders of releases that kept a file per run (``<run>.json``, ``<run>.queued``,
``<run>.started``) are still read at a takeover.
"""

from __future__ import annotations

import contextlib
import os
import threading
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from backfiller.clock import utc_now
from backfiller.launchers.base import LauncherEvent, Outcome, RunFinished, RunTask
from backfiller.launchers.worker import CLOSED_SUFFIX, OPEN_SUFFIX, Journal, parse_end

RESULTS_KEPT_SECONDS = 86_400.0
COMPACT_AFTER = 2_048
"""Written runs remembered before the segments they fill are looked at for deletion."""
COMPACT_SECONDS = 10.0


@dataclass
class Segment:
    """What one journal segment says (see the module's docstring)."""

    queued: set[int] = field(default_factory=set)
    started: set[int] = field(default_factory=set)
    ends: dict[int, str] = field(default_factory=dict)
    """Each run's last end, as the JSON its worker wrote."""

    def runs(self) -> set[int]:
        return self.queued | self.started | set(self.ends)


def read_segment(path: Path) -> Segment:
    """A segment's records; a line cut short (a writer killed mid-line) is skipped."""
    found = Segment()
    try:
        text = path.read_text(errors="replace")
    except FileNotFoundError:  # closed meanwhile by its writer
        try:
            text = path.with_suffix(CLOSED_SUFFIX).read_text(errors="replace")
        except OSError:
            return found
    except OSError:
        return found
    for line in text.splitlines():
        kind, _, rest = line.partition(" ")
        run, _, record = rest.partition(" ")
        try:
            run_id = int(run)
        except ValueError:
            continue
        if kind == "q":
            found.queued.add(run_id)
        elif kind == "s":
            found.started.add(run_id)
        elif kind == "e" and record:
            found.ends[run_id] = record
    return found


class ResultsFolder:
    """A results folder (made if missing; entries older than a day are swept at start)."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self.path.mkdir(parents=True, exist_ok=True)
        _sweep(self.path)
        self.journal = Journal(self.path, "launcher")
        self._written: set[int] = set()
        self._compacted = time.monotonic()
        self._lock = threading.Lock()

    def mark_queued(self, tasks: Iterable[RunTask]) -> None:
        self.journal.queued([t.run_id for t in tasks])

    def mark_started(self, run_id: int) -> None:
        """The run goes to its worker (after the launcher asked a plain gate itself)."""
        self.journal.started(run_id)

    def durable_results(self, run_ids: Iterable[int]) -> list[LauncherEvent]:
        """Ends kept by workers of this folder; ``NOT_STARTED`` for the runs a launcher of this
        folder held but never handed to a worker. A run this folder knows nothing of (another
        machine's) gets nothing."""
        wanted = list(run_ids)
        queued: set[int] = set()
        started: set[int] = set()
        ends: dict[int, str] = {}
        for path in self._segments():
            segment = read_segment(path)
            queued |= segment.queued
            started |= segment.started
            ends.update(segment.ends)
        found: list[LauncherEvent] = []
        for run_id in wanted:
            end = parse_end(ends[run_id]) if run_id in ends else _old_result(self.path, run_id)
            if end is not None:
                found.append(end)
            elif (run_id in queued and run_id not in started) or _old_never_started(
                self.path, run_id
            ):
                found.append(
                    RunFinished(run_id, utc_now(), Outcome.NOT_STARTED, "taken back: never started")
                )
        return found

    def discard(self, run_ids: Iterable[int]) -> None:
        """These runs' ends are written: their records may go (see the module's docstring)."""
        with self._lock:
            self._written.update(run_ids)
            due = time.monotonic() - self._compacted >= COMPACT_SECONDS
            if self._written and (len(self._written) >= COMPACT_AFTER or due):
                self._compact()

    def close(self) -> None:
        """The launcher's workers are stopped: delete what is written, stop appending."""
        self.journal.close()
        with self._lock:
            self._compact()

    def _segments(self) -> list[Path]:
        with contextlib.suppress(OSError):
            return [p for p in self.path.iterdir() if p.suffix in (OPEN_SUFFIX, CLOSED_SUFFIX)]
        return []

    def _compact(self) -> None:
        """Delete the segments whose runs are all written and that nobody appends to; forget
        the written runs that no segment left names."""
        self._compacted = time.monotonic()
        named: set[int] = set()
        for path in self._segments():
            runs = read_segment(path).runs()
            appending = path.suffix == OPEN_SUFFIX and _alive(path)
            if not appending and runs <= self._written:
                with contextlib.suppress(OSError):
                    path.unlink()
                    continue
            named |= runs
        self._written &= named


def _alive(segment: Path) -> bool:
    """Whether the process that writes an open segment ``kind-pid-nonce-n.journal`` lives."""
    try:
        pid = int(segment.name.split("-")[1])
        os.kill(pid, 0)
    except (IndexError, ValueError, ProcessLookupError):
        return False
    except PermissionError:
        return True
    return True


def _old_result(folder: Path, run_id: int) -> RunFinished | None:
    """A run's end as releases with a file per run kept it (``<run>.json``)."""
    try:
        return parse_end((folder / f"{run_id}.json").read_text())
    except OSError:
        return None


def _old_never_started(folder: Path, run_id: int) -> bool:
    return (folder / f"{run_id}.queued").exists() and not (folder / f"{run_id}.started").exists()


def _sweep(folder: Path) -> None:
    """Delete entries older than ``RESULTS_KEPT_SECONDS``: refused ends (a stale attempt) are
    never written, and a takeover happens within a lease, long before. A live process's newest
    segment is appended to, so it is never that old."""
    cutoff = time.time() - RESULTS_KEPT_SECONDS
    for path in folder.iterdir():
        with contextlib.suppress(OSError):
            if path.stat().st_mtime < cutoff:
                path.unlink()
