"""The launcher interface: tasks in, events out. No database here."""

from __future__ import annotations

import enum
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Protocol

MAX_LOG_LINES_PER_RUN = 10_000
MAX_LOG_LINE_CHARS = 8_000


@dataclass(frozen=True, slots=True)
class RunTask:
    """One attempt of one partition, as a worker needs it (picklable)."""

    run_id: int
    backfill_id: int
    job_name: str
    partition_key: str
    attempt: int
    run_config: Mapping[str, Any]
    tags: Mapping[str, str]
    partition_start: datetime | None = None
    partition_end: datetime | None = None
    timeout_seconds: float | None = None
    trace_parent: str | None = None
    """The W3C ``traceparent`` of the run's span, when tracing is on."""


class Outcome(enum.StrEnum):
    SUCCESS = "success"
    ERROR = "error"
    TIMEOUT = "timeout"
    WORKER_LOST = "worker_lost"
    CANCELED = "canceled"


@dataclass(frozen=True, slots=True)
class LogLine:
    at: datetime
    level: str
    message: str


@dataclass(frozen=True, slots=True)
class RunStarted:
    run_id: int
    at: datetime
    worker: str


@dataclass(frozen=True, slots=True)
class RunFinished:
    run_id: int
    at: datetime
    outcome: Outcome
    error_message: str | None = None
    error_traceback: str | None = None
    worker: str | None = None


@dataclass(frozen=True, slots=True)
class RunLogs:
    run_id: int
    lines: tuple[LogLine, ...] = field(default_factory=tuple)


LauncherEvent = RunStarted | RunFinished | RunLogs


class Launcher(Protocol):
    """What the daemon needs from a launcher.

    ``submit`` takes runs already written as QUEUED; ``poll`` returns what happened since the
    last call (a run's ``RunStarted`` always comes before its ``RunFinished``); ``cancel`` takes
    back a run not started yet, or stops a running one (SIGTERM, then SIGKILL after a grace
    period) and reports it ``CANCELED``.
    """

    @property
    def capacity(self) -> int:
        """How many runs may be handed over now (backlog and running included)."""
        ...

    def submit(self, tasks: Iterable[RunTask]) -> None: ...

    def poll(self) -> list[LauncherEvent]: ...

    def cancel(self, run_ids: Iterable[int]) -> None: ...

    def active(self) -> dict[int, RunTask]:
        """Runs handed over and not reported finished yet."""
        ...

    def set_notify(self, callback: Callable[[], None] | None) -> None:
        """Call ``callback`` (from any thread) when ``poll`` has something new."""
        ...

    def close(self, timeout: float = 10.0) -> list[LauncherEvent]:
        """Stop every worker; runs still in flight come back as ``WORKER_LOST`` events."""
        ...
