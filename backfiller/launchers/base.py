"""The launcher interface: tasks in, events out. No database here.

A launcher is what executes runs (the local pool of worker processes, an inline one for tests,
a Celery one...). The daemon owns the database; a launcher only ever sees the values below.
The contract every launcher keeps, so that a partition never executes twice at once:

**Fencing token.** A run's ``(run_id, attempt)`` is its fencing token. Every event a launcher
reports carries it; the daemon writes an event only if the run is still active, still leased to
the daemon and still at that attempt, so a result from a stale attempt (a run another daemon has
since taken over) is refused, never recorded.

**Start gate.** A claimed run waits in the launcher (QUEUED in the database) until a worker is
free. Right before a worker starts it, the launcher calls the gate that the daemon installed
with :meth:`Launcher.set_gate`, passing :class:`StartRequest` values; the gate checks in the
database that each run is still QUEUED, leased to the daemon at that attempt, of a RUNNING
backfill, under a valid lease, and returns the ids that may start. A run refused by the gate is
never started: the launcher reports it ``RunFinished(NOT_STARTED)``; the others start and are
reported with ``RunStarted``. This is what makes ``pauseBackfill`` and ``cancelBackfill``
immediate: once they have answered, no gate lets a run of that backfill start. Without a gate
(``set_gate(None)``) every run starts. The gate blocks (a database round trip), so it is called
without the launcher's locks held, from the launcher's own thread. A gate that is also a
:class:`WorkerGate` can hand out a :class:`StartCheck` instead: a launcher whose workers reach
the database (the local pool) lets each worker ask the gate's question itself, right before it
runs the job, so the read is off the launcher's path and made in parallel by the workers.

**Lease** (the :class:`LeasedLauncher` capability). The daemon holds a lease in the database
with a deadline, renewed every few seconds. After each renewal it calls
:meth:`LeasedLauncher.extend_lease` with the lease's owner (the name the daemon's runs are leased
under; a launcher that reports through the broker names its reply queue after it, so that the
daemon taking over finds it) and ``stop_by``: a wall-clock time (UTC) safely before the
lease's deadline. The launcher must guarantee that none of its runs is still executing at
``stop_by`` unless the lease is extended again: it starts no run past it and kills the runs
that reach it (the whole process group, or the remote equivalent), even when the daemon itself
is gone (the local pool's workers watch the deadline themselves). Another daemon takes over a
dead daemon's runs only after that daemon's lease deadline, so the two can never execute one
run at the same time. Runs killed this way are not reported (the daemon that loses its lease
forgets them; the daemon that takes over requeues them as ``WORKER_LOST``).

**Durable results** (the :class:`DurableResults` capability). A run that finished while its
daemon was dead must not be run again: a launcher that can keep results beyond its daemon (the
local pool writes them to a results folder before reporting them; the Celery workers send them
to the daemon's durable queue) returns them from :meth:`DurableResults.durable_results` when
the next daemon takes the dead daemon's runs over (under the dead daemon's lease lock, so only
one daemon reads them), and forgets them on :meth:`DurableResults.discard_results` once they
are written; once the dead daemon has no active run left, :meth:`DurableResults.forget_owner`
drops whatever is still kept for it. It may also return ``NOT_STARTED`` for runs it can tell
never started on a worker (those go back to their backfill without using a retry). A result's
``attempt`` is its fencing token: the daemon records it only for the run's current attempt. A
launcher without the capability keeps nothing (the runs are then requeued as ``WORKER_LOST``).

**Cancel and timeouts** stop the run's whole process group: SIGTERM, a grace period, SIGKILL.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Protocol, runtime_checkable

from backfiller.domain import Outcome, RunFinished
from backfiller.pickled import by_position

MAX_LOG_LINES_PER_RUN = 10_000
MAX_LOG_LINE_CHARS = 8_000


@by_position
@dataclass(frozen=True, slots=True)
class RunTask:
    """One attempt of one partition, as a worker needs it (picklable).

    ``(run_id, attempt)`` is the run's fencing token (see the module's docstring).
    """

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
    credential: str | None = None
    """The run's own bearer token for ``context.client`` (see storage.run_credentials)."""
    trace_parent: str | None = None
    """The W3C ``traceparent`` of the run's span, when tracing is on."""
    partition_keys: tuple[str, ...] = ()
    """A ranged run's partitions, in key order (``partition_key`` is the first); empty for a
    run of one partition. ``partition_start``/``partition_end`` then span the range."""


@by_position
@dataclass(frozen=True, slots=True)
class LogLine:
    at: datetime
    level: str
    message: str


@by_position
@dataclass(frozen=True, slots=True)
class RunStarted:
    """A run began on a worker: its start time and where (the daemon records it RUNNING; with
    a start gate, the gate's grant is what lets it begin)."""

    run_id: int
    at: datetime
    worker: str
    attempt: int | None = None


@by_position
@dataclass(frozen=True, slots=True)
class RunLogs:
    run_id: int
    lines: tuple[LogLine, ...] = field(default_factory=tuple)


LauncherEvent = RunStarted | RunFinished | RunLogs
"""``RunFinished`` and ``Outcome`` are declared in ``backfiller.domain`` (storage writes them)."""


@dataclass(frozen=True, slots=True)
class StartRequest:
    """A run the launcher is about to start on ``worker``, asked of the gate."""

    run_id: int
    attempt: int
    at: datetime
    worker: str
    backfill_id: int | None = None
    """The run's backfill, where the launcher knows it: the gate then reads only its rows
    (one partition on PostgreSQL)."""


Gate = Callable[[Sequence[StartRequest]], set[int]]
"""Returns the ids of the requested runs that may start now. Blocking."""


@by_position
@dataclass(frozen=True, slots=True)
class StartCheck:
    """What a worker process needs to ask the start gate itself (picklable): the database,
    and the daemon whose lease the run must still be under."""

    database_url: str
    owner: str


@runtime_checkable
class WorkerGate(Protocol):
    """A :data:`Gate` that can also be asked by the workers themselves (see the docstring)."""

    def __call__(self, requests: Sequence[StartRequest], /) -> set[int]: ...

    def check(self) -> StartCheck | None:
        """What workers ask the database; None while no run may start at all."""
        ...


class Launcher(Protocol):
    """The core every launcher implements (see ``docs/launchers.md``).

    ``submit`` takes runs already written as QUEUED; ``poll`` returns what happened since the
    last call (a run's ``RunStarted`` always comes before its ``RunFinished``); ``cancel`` takes
    back a run not started yet, or stops a running one (SIGTERM to its process group, then
    SIGKILL after a grace period) and reports it ``CANCELED``. What more a launcher can promise
    is declared by the capabilities below, which the daemon checks with ``isinstance``.
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

    def set_gate(self, gate: Gate | None) -> None:
        """Ask ``gate`` right before starting runs (see the module's docstring)."""
        ...

    def close(self, timeout: float = 10.0) -> list[LauncherEvent]:
        """Stop every worker; runs still in flight come back as ``WORKER_LOST`` events."""
        ...


@runtime_checkable
class LeasedLauncher(Protocol):
    """A launcher that stops its runs at the daemon's lease (see the module's docstring).

    Without it, a daemon that loses its lease can only cancel its runs (best effort): a run
    may then still execute when another daemon takes it over, so several daemons are safe
    only with a leased launcher."""

    def extend_lease(self, owner: str, stop_by: datetime) -> None:
        """``owner`` holds the lease: runs submitted from now on are leased to it, and no run
        of this launcher may still execute at ``stop_by`` (UTC) unless extended.

        ``owner`` changes only after :meth:`revoke_lease` (the daemon starts over as a new
        owner); the old owner's runs are then taken over like any dead daemon's."""
        ...

    def revoke_lease(self) -> list[RunTask]:
        """The lease is lost: kill every run now (process groups, SIGKILL) and forget them.

        Returns the runs that were in flight; none of them is reported by ``poll``.
        """
        ...


@runtime_checkable
class DurableResults(Protocol):
    """A launcher whose results outlive their daemon (see the module's docstring).

    Without it, a run that finished while its daemon was dead ends ``WORKER_LOST`` and runs
    again (at-least-once)."""

    def durable_results(self, owner: str, run_ids: Iterable[int]) -> list[LauncherEvent]:
        """How these runs of ``owner`` (a dead daemon being taken over) ended, as kept beyond
        their daemon, with the log lines kept of them (``RunFinished`` and ``RunLogs``; empty
        if the launcher keeps none). Blocking."""
        ...

    def discard_results(self, owner: str, run_ids: Iterable[int]) -> None:
        """The results of these runs of ``owner`` are written: forget their durable copies."""
        ...

    def recorded(self, events: Sequence[LauncherEvent]) -> None:
        """These events of ``poll`` are settled in the database (written, or refused as a
        stale attempt's): what the launcher kept to report them again may go."""
        ...

    def forget_owner(self, owner: str) -> None:
        """``owner`` (another daemon) has no active run left: forget all that is kept for it.
        Blocking."""
        ...


@runtime_checkable
class Warming(Protocol):
    """A launcher whose workers take a while to start (processes importing the definitions
    and opening a database connection). The daemon waits for them, within a bound, before it
    takes its lease and answers ready, so that its first run is not later than the next."""

    def warming(self) -> bool:
        """Whether a worker is still starting (False once all are ready, or none can be)."""
        ...


__all__ = [
    "MAX_LOG_LINES_PER_RUN",
    "MAX_LOG_LINE_CHARS",
    "DurableResults",
    "Gate",
    "Launcher",
    "LauncherEvent",
    "LeasedLauncher",
    "LogLine",
    "Outcome",
    "RunFinished",
    "RunLogs",
    "RunStarted",
    "RunTask",
    "StartCheck",
    "StartRequest",
    "Warming",
    "WorkerGate",
]
