"""The local launcher's results folder: journals appended by the launcher and its workers, read
at a takeover, deleted once what they hold is written."""

from __future__ import annotations

import json
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path

from backfiller.launchers.base import Outcome, RunFinished, RunTask
from backfiller.launchers.local.folder import ResultsFolder
from backfiller.launchers.worker import Journal

AT = datetime(2024, 1, 1, tzinfo=UTC)


def task(run_id: int) -> RunTask:
    return RunTask(run_id, 1, "noop", str(run_id), attempt=1, run_config={}, tags={})


def end(run_id: int, attempt: int = 1) -> RunFinished:
    return RunFinished(run_id, AT, Outcome.SUCCESS, None, None, "host:1", attempt)


def dead_pid() -> int:
    command = [sys.executable, "-c", "import os; print(os.getpid())"]
    done = subprocess.run(command, check=True, capture_output=True, text=True)
    return int(done.stdout)


def test_a_takeover_reads_ends_kept_and_runs_never_started(tmp_path: Path) -> None:
    folder = ResultsFolder(tmp_path)
    folder.mark_queued([task(1), task(2), task(3), task(4)])
    worker = Journal(tmp_path, "worker")
    worker.started(1)
    worker.ended(RunFinished(1, AT, Outcome.ERROR, "boom", "trace", "host:1", 2))
    worker.started(2)  # started, never ended: lost
    folder.mark_started(3)  # handed over by the launcher itself, never ended: lost
    found = {e.run_id: e for e in folder.durable_results([1, 2, 3, 4, 5])}
    assert set(found) == {1, 4}, "2 and 3 started (lost), 5 is unknown here"
    assert found[1] == RunFinished(1, AT, Outcome.ERROR, "boom", "trace", "host:1", 2)
    assert isinstance(found[4], RunFinished) and found[4].outcome is Outcome.NOT_STARTED


def test_a_line_cut_short_is_skipped(tmp_path: Path) -> None:
    worker = Journal(tmp_path, "worker")
    worker.ended(end(1))
    with worker.current().open("a") as cut:
        cut.write('e 2 {"run_id": 2, "att')  # the writer was killed mid-line
    found = ResultsFolder(tmp_path).durable_results([1, 2])
    assert [e.run_id for e in found] == [1]


def test_segments_rotate_and_a_runs_records_stay_in_one(tmp_path: Path) -> None:
    worker = Journal(tmp_path, "worker", per_segment=2)
    for run_id in range(1, 6):
        worker.started(run_id)
        worker.ended(end(run_id))
    closed = sorted(p.name for p in tmp_path.glob("*.closed"))
    assert len(closed) == 2 and len(list(tmp_path.glob("*.journal"))) == 1
    for path in tmp_path.iterdir():
        lines = path.read_text().splitlines()
        started = {line.split()[1] for line in lines if line.startswith("s ")}
        ended = {line.split()[1] for line in lines if line.startswith("e ")}
        assert started == ended
    assert len(ResultsFolder(tmp_path).durable_results(range(1, 6))) == 5


def test_written_segments_go_unless_still_appended_or_unwritten(tmp_path: Path) -> None:
    folder = ResultsFolder(tmp_path)
    closed = Journal(tmp_path, "worker")
    closed.ended(end(1))
    closed.close()  # its writer is done with it
    live = Journal(tmp_path, "worker")  # this process lives and appends to it
    live.ended(end(2))
    orphan = tmp_path / f"worker-{dead_pid()}-0badc0de-0.journal"  # its writer died
    orphan.write_text("s 3\ne 3 {}\n")
    unwritten = Journal(tmp_path, "worker")
    unwritten.ended(end(4))
    unwritten.ended(end(5))
    unwritten.close()
    folder.discard([1, 2, 3, 4])
    folder.close()  # compacts now
    left = {p.name for p in tmp_path.iterdir()}
    assert left == {live.current().name, unwritten.current().with_suffix(".closed").name}
    assert [e.run_id for e in folder.durable_results([2, 5])] == [2, 5]


def test_a_folder_of_a_release_with_a_file_per_run_is_read(tmp_path: Path) -> None:
    record = {
        "run_id": 7,
        "attempt": 1,
        "at": AT.isoformat(),
        "outcome": "success",
        "error_message": None,
        "error_traceback": None,
        "worker": "host:1",
    }
    (tmp_path / "7.json").write_text(json.dumps(record))
    (tmp_path / "8.queued").touch()
    (tmp_path / "9.queued").touch()
    (tmp_path / "9.started").touch()
    found = {e.run_id: e for e in ResultsFolder(tmp_path).durable_results([7, 8, 9])}
    assert found[7] == end(7)
    assert isinstance(found[8], RunFinished) and found[8].outcome is Outcome.NOT_STARTED
    assert 9 not in found
