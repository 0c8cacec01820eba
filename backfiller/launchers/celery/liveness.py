"""Lease bookkeeping: announcing until when runs may execute, and ending the silent ones.

About once a second the launcher announces on the lease exchange until when its runs may
execute (``stop_by``: at most half the heartbeat timeout ahead, never past the daemon's lease),
and which must stop now (``drop``). A run whose heartbeats stop for half the heartbeat timeout
(its worker was SIGKILLed, or cut off) is dropped from the announcements, so its worker kills
it at the last ``stop_by`` it heard; once that time (its fence) has passed, the run cannot be
executing anywhere and is reported ``WORKER_LOST``. A canceled run is dropped after the grace.
Heartbeats missed while the broker was out of reach do not count, nor does the time the
daemon's queue waited unread (silence is measured up to where the queue has been read: a
worker that is merely busy, or a daemon behind on its queue, is not taken for dead).

A run granted to a worker that then said it had given up waiting (the grant came late, after a
cut of the daemon) never ran: once the queue has been read ``GAVE_UP_SECONDS`` past that note
with no heartbeat of the run, it is reported ``NOT_STARTED`` (it costs nothing). A new request
of that worker for the attempt (granted again, see ``Grants``) or a heartbeat means it runs it:
it goes on.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass
from typing import Any

from backfiller.launchers.base import Outcome
from backfiller.launchers.celery.dispatch import republish_if_overtaken, republish_mates
from backfiller.launchers.celery.envelope import leases_name, seal
from backfiller.launchers.celery.protocol import BEAT_SECONDS
from backfiller.launchers.celery.state import Shared

logger = logging.getLogger("backfiller.launcher")

WATCH_SECONDS = 0.1
"""How often the runs are looked over for silence, cancels and fences (seconds matter)."""
GAVE_UP_SECONDS = 3.0
"""How long a granted run whose worker said it gave up waits for a heartbeat (its worker asked
again and runs it) before it is taken back as never started."""
FENCE_MARGIN_SECONDS = 1.0
"""Waited past a run's ``stop_by`` before it is taken for stopped (clock skew, kill time)."""


@dataclass
class Farewell:
    """Runs of a lease owner this launcher gave up (``revoke_lease``): announced dropped, so
    that their workers stop them now, until their fence has passed."""

    owner: str
    drop: list[list[int]]
    until: float


class Liveness:
    """Announcements and the watch over runs (the broker's thread)."""

    def __init__(self, shared: Shared) -> None:
        self.shared = shared
        self.farewells: list[Farewell] = []
        self.last_announce = 0.0
        self.last_watch = 0.0

    def farewell(self) -> None:
        """The lease is lost: announce the started runs dropped, until they surely stopped
        (under the lock, before the runs are forgotten)."""
        shared = self.shared
        started = [r for r in shared.runs.values() if r.reply is not None]
        if shared.owner is not None and started:
            drop = [[r.task.run_id, r.task.attempt] for r in started]
            until = max(r.fence for r in started) + FENCE_MARGIN_SECONDS
            self.farewells.append(Farewell(shared.owner, drop, until))
            self.last_announce = 0.0

    def announce(self, producer: Any) -> None:
        now = time.monotonic()
        if now - self.last_announce < BEAT_SECONDS:
            return
        shared = self.shared
        with shared.lock:
            owner = shared.owner
            stop_by = shared.stop_by()
            live = [r for r in shared.runs.values() if r.reply is not None and r.dropped is None]
            drop = [
                [r.task.run_id, r.task.attempt]
                for r in shared.runs.values()
                if r.reply is not None and r.dropped is not None
            ]
            self.farewells = [f for f in self.farewells if time.time() < f.until]
            farewells = list(self.farewells)
        announcements = [(f.owner, time.time(), f.drop) for f in farewells]
        if owner is not None:
            announcements.append((owner, stop_by, drop))
        for name, until, dropped in announcements:
            announcement = {"t": "lease", "owner": name, "stop_by": until, "drop": dropped}
            producer.publish(
                seal(announcement, leases_name()),
                serializer="json",
                retry=False,
                expiration=5,
            )
        self.last_announce = now
        with shared.lock:
            for run in live:
                if run.dropped is None:
                    run.fence = max(run.fence, stop_by)

    def watch(self) -> None:
        """Runs gone silent or canceled are dropped; once their fence passed, they end."""
        now = time.monotonic()
        if now - self.last_watch < WATCH_SECONDS:
            return
        self.last_watch = now
        shared = self.shared
        half = shared.heartbeat_timeout / 2
        with shared.lock:
            connected_at, read_until = shared.connected_at, shared.drained_at
            for run_id, run in list(shared.runs.items()):
                if run.reply is None:
                    republish_if_overtaken(shared, run, now)
                    continue
                if run.gave_up_at is not None and run.dropped is None:
                    if run.last_beat > run.gave_up_at:
                        run.gave_up_at = None  # it runs after all
                    elif read_until is not None and read_until - run.gave_up_at > GAVE_UP_SECONDS:
                        del shared.runs[run_id]
                        why = "its worker gave up before the grant"
                        shared.finish(run, Outcome.NOT_STARTED, why)
                        republish_mates(shared, run)
                        continue
                if run.dropped is None:
                    if run.cancel_at is not None and now >= run.cancel_at:
                        run.dropped = Outcome.CANCELED
                    elif run.gave_up_at is None and silent(
                        run.last_beat, connected_at, read_until, half
                    ):
                        logger.warning("run %s: no heartbeat from %s", run_id, run.worker)
                        run.dropped = Outcome.WORKER_LOST
                if run.dropped is not None and time.time() > run.fence + FENCE_MARGIN_SECONDS:
                    del shared.runs[run_id]
                    why = "canceled" if run.dropped is Outcome.CANCELED else "the worker was lost"
                    shared.finish(run, run.dropped, why)
                    republish_mates(shared, run)


def silent(
    last_beat: float, connected_at: float | None, read_until: float | None, half: float
) -> bool:
    """Whether a run's heartbeats stopped for ``half`` the heartbeat timeout, as far as the
    daemon's queue has been read (``read_until``): a beat still waiting in the queue, behind a
    backlog of other messages, is not a missed one. Beats missed while the broker was out of
    reach (before ``connected_at``) do not count."""
    if connected_at is None or read_until is None:
        return False
    return read_until - max(last_beat, connected_at) > half
