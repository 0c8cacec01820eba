"""What the Celery launcher's parts share: the runs it holds, and the queues between its threads.

Three threads touch it, always under ``lock``: the daemon's (``submit``, ``poll``, ``cancel``...),
the broker's (publishing, receiving, announcing; see :mod:`.launcher`) and the gate's (answering
start requests; see :mod:`.grants`).
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict, deque
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from backfiller.clock import utc_now
from backfiller.launchers.base import Gate, LauncherEvent, Outcome, RunFinished, RunTask

LOST_KEPT = 100_000
"""Runs reported lost that are remembered, at most (see ``Shared.lost``)."""
LATE_WAIT_SECONDS = 60.0
"""How long, at most, a partition's starts wait for its late end to be written."""


LATE_GRACE_SECONDS = 5.0
"""How long a retry's start waits, at most, for the late end of its partition's lost run once
that run's worker machine is heard from again (see ``Shared.late_may_come``): longer than a
worker waits between two tries to send a result (2 s)."""
LATE_HOLD_SECONDS = 600.0
"""A lost run's worker machine heard from again this long after the loss no longer holds a
retry back."""


def partition_of(task: RunTask) -> tuple[int, str, str]:
    return (task.backfill_id, task.job_name, task.partition_key)


def host_of(worker: str | None) -> str:
    return (worker or "").rpartition(":")[0]


@dataclass
class LostPartition:
    """A partition whose run this launcher reported lost: where it ran, and when."""

    run_id: int
    host: str
    lost_at: float
    back_at: float | None = None
    """When a retry first found its machine heard from again (monotonic)."""


@dataclass
class DaemonRun:
    """A run this launcher holds, from its submission to its end."""

    task: RunTask
    queue: str
    owner: str
    published: bool = False
    reply: str | None = None
    """The queue of the worker process its start was granted to (None: not granted)."""
    worker: str | None = None
    last_beat: float = 0.0
    fence: float = 0.0
    """The latest ``stop_by`` announced while it ran: nothing executes it past this time."""
    dropped: Outcome | None = None
    cancel_at: float | None = None
    sequence: int = 0
    """Its place on its queue among this launcher's publications (its latest copy's)."""
    first_sequence: int = 0
    """Its first copy's place: a start request does not say which copy asked, and the first
    copy is the one ahead on the queue (see ``Inbox._asked``). Reset when that copy is surely
    or likely gone (its worker handed it back; the broker connection broke)."""
    published_at: float = 0.0
    overtaken_at: float | None = None
    """Since when runs published after it have asked to start while it has not (None: it is
    not overtaken, or its task is under way on a worker)."""
    republish_after: float = 0.0
    granted_at: float = 0.0
    """When its start was granted (wall clock, for the job's run time)."""
    gave_up_at: float | None = None
    """When its worker said it gave up waiting for the start (monotonic), the start being
    granted: taken back unless a heartbeat shows it runs after all (see ``Liveness.watch``)."""
    mates: list[DaemonRun] = field(default_factory=list)
    """The other runs of the task that carries it (short runs travel together)."""


@dataclass
class StartAsked:
    """A worker's request to start a run, waiting for the gate's answer."""

    run_id: int
    attempt: int
    worker: str
    reply: str
    until: float
    at: datetime = field(default_factory=utc_now)
    backfill_id: int | None = None
    """The run's backfill (the daemon's record of the run says)."""


@dataclass
class Shared:
    """The launcher's state (see the module's docstring)."""

    owner: str | None
    heartbeat_timeout: float
    lock: threading.RLock = field(default_factory=threading.RLock)
    runs: dict[int, DaemonRun] = field(default_factory=dict)
    unpublished: deque[DaemonRun] = field(default_factory=deque)
    """Runs to publish, oldest first (a run dropped meanwhile is skipped)."""
    events: list[LauncherEvent] = field(default_factory=list)
    replies: deque[tuple[str, dict[str, Any]]] = field(default_factory=deque)
    """Answers and cancels to send: (worker queue, message)."""
    starts: list[StartAsked] = field(default_factory=list)
    starts_waiting: threading.Event = field(default_factory=threading.Event)
    notify: Callable[[], None] | None = None
    gate: Gate | None = None
    lease_stop_by: float | None = None
    connected_at: float | None = None
    drained_at: float | None = None
    """When the latest read of the daemon's queue began that ended with the queue empty: every
    heartbeat sent before then has been read (a later one may still wait in the queue)."""
    sequence: int = 0
    asked: dict[str, int] = field(default_factory=dict)
    """Per queue, the publication sequence of the latest run a worker asked to start."""
    withdrawn: OrderedDict[tuple[int, int], tuple[str, int]] = field(default_factory=OrderedDict)
    """The latest attempts withdrawn before they started (see ``withdraw``), with their place
    (queue, first copy's sequence): a worker asking to start one is refused, and its place
    counts as asked all the same, so the runs published before it are seen overtaken."""
    took: dict[str, float] = field(default_factory=dict)
    """Per job, how long its runs took lately (seconds, a moving average)."""
    closing: bool = False
    heard: dict[str, float] = field(default_factory=dict)
    """Per worker process (``host:pid``), when it last asked to start a run, beat or reported
    (monotonic): the live workers, as ``backfiller_launcher_workers_ready`` counts them."""
    lost: dict[int, tuple[RunTask, float]] = field(default_factory=dict)
    """Runs reported ``WORKER_LOST`` lately, and when (monotonic): a late end of one of them
    may still be recorded (see ``Inbox``). Oldest first, at most ``LOST_KEPT``."""
    late: dict[tuple[int, str, str], float] = field(default_factory=dict)
    """Partitions (backfill, job, key) with a late end being written, and since when
    (monotonic): no start of theirs is granted meanwhile (see ``Grants``)."""
    late_runs: dict[int, tuple[int, str, str]] = field(default_factory=dict)
    """The runs whose late end is being written, and their partitions (in ``late``)."""
    lost_partitions: dict[tuple[int, str, str], LostPartition] = field(default_factory=dict)
    """The partitions of the runs in ``lost`` (see ``late_may_come``)."""

    def heard_from(self, worker: str | None) -> None:
        """A worker process spoke (under the lock)."""
        if worker:
            self.heard[worker] = time.monotonic()

    def live_workers(self) -> int:
        """Worker processes heard from within the heartbeat timeout (under the lock)."""
        since = time.monotonic() - self.heartbeat_timeout
        for name in [n for n, at in self.heard.items() if at < since]:
            del self.heard[name]
        return len(self.heard)

    def stop_by(self) -> float:
        """Until when runs may execute, as announced now: half the heartbeat timeout ahead,
        never past the daemon's lease."""
        stop_by = time.time() + self.heartbeat_timeout / 2
        if self.lease_stop_by is not None:
            stop_by = min(stop_by, self.lease_stop_by)
        return stop_by

    def finish(self, run: DaemonRun, outcome: Outcome, message: str | None) -> None:
        """Report ``run`` ended (under the lock)."""
        task = run.task
        self.events.append(
            RunFinished(task.run_id, utc_now(), outcome, message, None, run.worker, task.attempt)
        )
        if outcome is Outcome.WORKER_LOST and run.reply is not None:
            now = time.monotonic()
            self.lost[task.run_id] = (task, now)
            self.lost_partitions[partition_of(task)] = LostPartition(
                task.run_id, host_of(run.worker), now
            )
            while len(self.lost) > LOST_KEPT:
                del self.lost[next(iter(self.lost))]
            while len(self.lost_partitions) > LOST_KEPT:
                del self.lost_partitions[next(iter(self.lost_partitions))]

    def late_may_come(self, task: RunTask) -> bool:
        """Whether a start of ``task`` should wait a little for the late end of its partition's
        lost run (under the lock): that run's machine is heard from again (it was cut off, not
        dead), so its end, kept there, is likely on its way; a few seconds
        (``LATE_GRACE_SECONDS``) from when it came back, at most."""
        if not self.lost_partitions:
            return False
        key = partition_of(task)
        lost = self.lost_partitions.get(key)
        if lost is None or lost.run_id == task.run_id:
            return False
        now = time.monotonic()
        if now - lost.lost_at > LATE_HOLD_SECONDS:
            del self.lost_partitions[key]
            return False
        if lost.back_at is None:
            if not any(
                host_of(name) == lost.host and at > lost.lost_at for name, at in self.heard.items()
            ):
                return False  # its machine is gone, or still cut off: no end is coming soon
            lost.back_at = now
        return now - lost.back_at < LATE_GRACE_SECONDS

    def late_recorded(self, run_id: int) -> None:
        """A late end is written (or refused): its partition's starts are granted again."""
        key = self.late_runs.pop(run_id, None)
        if key is not None:
            self.late.pop(key, None)

    def late_pending(self, task: RunTask) -> bool:
        """Whether a late end of ``task``'s partition is being written (under the lock)."""
        if not self.late:
            return False
        since = self.late.get(partition_of(task))
        return since is not None and time.monotonic() - since < LATE_WAIT_SECONDS

    def signal(self) -> None:
        callback = self.notify
        if callback is not None and self.events:
            callback()

    def send_cancel(self, run: DaemonRun) -> None:
        assert run.reply is not None
        body = {"t": "cancel", "run": run.task.run_id, "attempt": run.task.attempt}
        self.replies.append((run.reply, body))
