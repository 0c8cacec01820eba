"""A launcher that runs jobs in the calling process, for tests and for trying things out.

Tasks run when :meth:`InlineLauncher.poll` is called (so a daemon tick that polls drives
them), one after the other, in submission order. With ``hold=True`` runs are reported started
but do not run until :meth:`release`: a test can then pause, cancel or lose them mid-flight.
No timeouts and no isolation: a job that hangs hangs the caller. It runs in the caller's
thread, so it takes no start gate (``set_gate`` is ignored; a gate's transaction would wait
for the very loop that polls): pause and cancel take effect at its next poll.

It implements the core :class:`~backfiller.launchers.base.Launcher` protocol and the
:class:`~backfiller.launchers.base.LeasedLauncher` capability (its runs execute only inside
``poll``, so none can outlive a lease it was told of): the worked example of
``docs/launchers.md``.
"""

from __future__ import annotations

import logging
import traceback
from collections.abc import Callable, Iterable
from datetime import UTC, datetime

from backfiller.clock import utc_now
from backfiller.definitions.loading import Definitions
from backfiller.launchers.base import (
    Gate,
    LauncherEvent,
    LogLine,
    Outcome,
    RunFinished,
    RunLogs,
    RunStarted,
    RunTask,
    StartRequest,
)
from backfiller.launchers.run_context import prepare_run


class _Collect(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.lines: list[LogLine] = []

    def emit(self, record: logging.LogRecord) -> None:
        at = datetime.fromtimestamp(record.created, UTC)
        self.lines.append(LogLine(at, record.levelname, record.getMessage()))


class InlineLauncher:
    def __init__(self, definitions: Definitions, max_active: int = 16, hold: bool = False) -> None:
        self.definitions = definitions
        self.max_active = max_active
        self.hold = hold
        self.tasks: dict[int, RunTask] = {}
        self.started: set[int] = set()
        self.events: list[LauncherEvent] = []
        self.submitted: list[RunTask] = []
        self.gate: Gate | None = None
        self.stop_by: datetime | None = None

    @property
    def capacity(self) -> int:
        return max(0, self.max_active - len(self.tasks))

    def submit(self, tasks: Iterable[RunTask]) -> None:
        for task in tasks:
            self.tasks[task.run_id] = task
            self.submitted.append(task)

    def cancel(self, run_ids: Iterable[int]) -> None:
        for run_id in run_ids:
            if self.tasks.pop(run_id, None) is not None:
                self.started.discard(run_id)
                self.events.append(RunFinished(run_id, utc_now(), Outcome.CANCELED, "canceled"))

    def lose(self, run_ids: Iterable[int]) -> None:
        """Report runs as if their worker died."""
        for run_id in run_ids:
            if self.tasks.pop(run_id, None) is not None:
                self.started.discard(run_id)
                self.events.append(
                    RunFinished(run_id, utc_now(), Outcome.WORKER_LOST, "the worker process died")
                )

    def release(self) -> None:
        self.hold = False

    def poll(self) -> list[LauncherEvent]:
        self._start()
        for run_id, task in list(self.tasks.items()):
            if run_id not in self.started:
                continue
            if not self.hold:
                self.events += self._execute(task)
                del self.tasks[run_id]
                self.started.discard(run_id)
        events, self.events = self.events, []
        return events

    def active(self) -> dict[int, RunTask]:
        return dict(self.tasks)

    def set_notify(self, callback: Callable[[], None] | None) -> None:
        return None

    def set_gate(self, gate: Gate | None) -> None:
        return None  # see the module's docstring

    def extend_lease(self, owner: str, stop_by: datetime) -> None:
        self.stop_by = stop_by

    def revoke_lease(self) -> list[RunTask]:
        tasks = list(self.tasks.values())
        self.tasks.clear()
        self.started.clear()
        return tasks

    def _start(self) -> None:
        """Start the runs not started yet, through the gate when there is one."""
        waiting = [t for r, t in self.tasks.items() if r not in self.started]
        if not waiting:
            return
        if self.gate is None:
            for task in waiting:
                self.started.add(task.run_id)
                self.events.append(RunStarted(task.run_id, utc_now(), "inline", task.attempt))
            return
        now = utc_now()
        allowed = self.gate(
            [StartRequest(t.run_id, t.attempt, now, "inline", t.backfill_id) for t in waiting]
        )
        for task in waiting:
            if task.run_id in allowed:
                self.started.add(task.run_id)
            else:
                del self.tasks[task.run_id]
                self.events.append(
                    RunFinished(
                        task.run_id,
                        utc_now(),
                        Outcome.NOT_STARTED,
                        "not started",
                        None,
                        None,
                        task.attempt,
                    )
                )

    def close(self, timeout: float = 10.0) -> list[LauncherEvent]:
        lost: list[LauncherEvent] = [
            RunFinished(r, utc_now(), Outcome.WORKER_LOST, "the daemon stopped") for r in self.tasks
        ]
        self.tasks.clear()
        return lost

    def _execute(self, task: RunTask) -> list[LauncherEvent]:
        collect = _Collect()
        prepared = prepare_run(self.definitions, task, collect, None)  # no API: no client
        if isinstance(prepared, str):
            return [RunFinished(task.run_id, utc_now(), Outcome.ERROR, prepared)]
        job, context = prepared
        log = context.log
        outcome, message, trace = Outcome.SUCCESS, None, None
        try:
            job(context)
        except Exception as exc:
            outcome, message = Outcome.ERROR, f"{type(exc).__name__}: {exc}"
            trace = "".join(traceback.format_exception(exc))
            log.error("run failed: %s", message)
        events: list[LauncherEvent] = []
        if collect.lines:
            events.append(RunLogs(task.run_id, tuple(collect.lines)))
        events.append(RunFinished(task.run_id, utc_now(), outcome, message, trace, "inline"))
        return events
