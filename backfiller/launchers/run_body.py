"""What every worker does around the user's function, whatever launcher sent the run.

The local pool's worker processes (:mod:`.worker`) and the Celery workers' pool processes
(:mod:`.celery.runner`) run a job the same way: its log lines go to a :class:`RunLogBuffer`
that ships them in batches (how they travel is the launcher's), SIGTERM becomes
:class:`Terminated` inside the job, and :func:`execute` turns the job's return or exception into
an :class:`~backfiller.domain.Outcome`.
"""

from __future__ import annotations

import contextlib
import logging
import signal
import threading
import time
import traceback
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from types import FrameType
from typing import Any

from backfiller.clock import utc_now
from backfiller.domain import Outcome
from backfiller.launchers.base import MAX_LOG_LINE_CHARS, MAX_LOG_LINES_PER_RUN, LogLine, RunTask
from backfiller.launchers.run_context import prepare_run

FLUSH_SECONDS = 0.5
"""A run's log lines are shipped at least this often (or every ``FLUSH_LINES`` lines)."""
FLUSH_LINES = 200

Result = tuple[Outcome, str | None, str | None]
"""How a run ended: its outcome, error message and traceback."""


class Terminated(BaseException):
    """Raised inside the job when its process gets SIGTERM (cancel, timeout)."""


def on_sigterm(signum: int, frame: FrameType | None) -> None:
    """A SIGTERM handler: the job's thread raises :class:`Terminated`."""
    raise Terminated


class JobCall:
    """Where one call of a job stands, for a SIGTERM handler that must stop the job but not
    what follows it: whether a stop arriving in a given frame may still interrupt the job.

    A SIGTERM is handled between two bytecodes of the main thread, possibly a few after the
    job returned (its ``return`` happened, its outcome is not yet known to the caller). Raising
    there would turn a job that returned into a stopped one; so the handler looks at the frame
    it runs in: inside the job (a frame below :func:`_call_job`) or before it was called, it
    interrupts; in :func:`_call_job` itself or once the call left the stack, the job has
    returned (or is about to be called: it then runs, and its stop comes from the grace)."""

    def __init__(self) -> None:
        self.called = False

    def interruptible(self, frame: FrameType | None) -> bool:
        if not self.called:
            return True
        if frame is not None and frame.f_code is _call_job.__code__:
            return False
        while frame is not None:
            if frame.f_code is _call_job.__code__:
                return True
            frame = frame.f_back
        return False


def _call_job(job: Callable[[Any], Any], context: Any, call: JobCall | None) -> None:
    if call is not None:
        call.called = True
    job(context)


@contextlib.contextmanager
def sigterm_raises(unless: Callable[[FrameType | None], bool] | None = None) -> Iterator[None]:
    """While the block runs, SIGTERM raises :class:`Terminated` (the handler is restored),
    except when ``unless(frame)`` is true for the frame the handler runs in: the job has
    returned, and a SIGTERM sent to its process group as it returned is no news (without this,
    it would raise past the job's end, or, once the handler is restored, end the process)."""

    def handler(signum: int, frame: FrameType | None) -> None:
        if unless is None or not unless(frame):
            raise Terminated

    previous = signal.signal(signal.SIGTERM, handler)
    try:
        yield
    finally:
        with contextlib.suppress(ValueError):
            signal.signal(signal.SIGTERM, previous)


class RunLogBuffer(logging.Handler):
    """A run's log lines, kept in order and shipped in batches by ``ship`` (at most
    ``MAX_LOG_LINES_PER_RUN`` a run; the rest are counted and said at the end)."""

    def __init__(self, ship: Callable[[list[LogLine]], None]) -> None:
        super().__init__(logging.DEBUG)
        self.ship = ship
        self.lines: list[LogLine] = []
        self.count = 0
        self.dropped = 0
        self.last_flush = time.monotonic()
        self.buffer_lock = threading.Lock()

    def emit(self, record: logging.LogRecord) -> None:
        try:
            message = record.getMessage()
            if record.exc_info:
                message += "\n" + "".join(traceback.format_exception(*record.exc_info))
        except Exception:
            message = str(record.msg)
        with self.buffer_lock:
            if self.count >= MAX_LOG_LINES_PER_RUN:
                self.dropped += 1
                return
            self.count += 1
            at = datetime.fromtimestamp(record.created, UTC)
            self.lines.append(LogLine(at, record.levelname, message[:MAX_LOG_LINE_CHARS]))
            full = len(self.lines) >= FLUSH_LINES
        if full or self.stale():
            self.flush()

    def stale(self) -> bool:
        return time.monotonic() - self.last_flush > FLUSH_SECONDS

    def take(self, final: bool = False) -> list[LogLine]:
        """The lines not shipped yet (``final``: with a line counting the dropped ones)."""
        with self.buffer_lock:
            lines, self.lines = self.lines, []
            self.last_flush = time.monotonic()
            if final and self.dropped:
                lines.append(
                    LogLine(utc_now(), "WARNING", f"{self.dropped} more log lines were dropped")
                )
        return lines

    def flush(self) -> None:
        lines = self.take()
        if lines:
            self.ship(lines)

    def flush_if_stale(self) -> None:
        if self.stale():
            self.flush()


def stop_reason(outcome: Outcome, task: RunTask) -> str:
    """The error message of a run stopped from outside."""
    if outcome is Outcome.TIMEOUT:
        return f"timed out after {task.timeout_seconds:g} s"
    if outcome is Outcome.CANCELED:
        return "canceled"
    return "stopped by its daemon"


def execute(
    definitions: Any,
    task: RunTask,
    handler: logging.Handler,
    api_url: str | None,
    stopping: Callable[[], Outcome | None] | None = None,
    call: JobCall | None = None,
) -> Result:
    """Run ``task``'s job with its context; how it ended.

    ``stopping`` says why the run is being stopped (cancel, timeout...), if it is: a job
    ending then ends with that outcome, whatever it raised. Without it, :class:`Terminated`
    propagates (the local worker exits on it). ``call``, when given, follows the job's call
    for a SIGTERM handler (:class:`JobCall`).
    """
    prepared = prepare_run(definitions, task, handler, api_url)
    if isinstance(prepared, str):
        return Outcome.ERROR, prepared, None
    job, context = prepared
    try:
        _call_job(job, context, call)
    except Terminated:
        if stopping is None:
            raise
        outcome = stopping() or Outcome.WORKER_LOST
        return outcome, stop_reason(outcome, task), None
    except BaseException as exc:
        stopped = stopping() if stopping is not None else None
        if stopped is not None:
            return stopped, stop_reason(stopped, task), None
        message = f"{type(exc).__name__}: {exc}"[:MAX_LOG_LINE_CHARS]
        context.log.error("run failed: %s", message)
        return Outcome.ERROR, message, "".join(traceback.format_exception(exc))
    return Outcome.SUCCESS, None, None
