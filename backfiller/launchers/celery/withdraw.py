"""Withdrawing the runs that may no longer start: a pause, a cancel, a lost lease.

A published run waits on the broker until a worker takes its task and asks to start it; on a
busy queue that may be long after its backfill was paused or canceled. So, about every
``CHECK_SECONDS``, the gate's thread (:mod:`.grants`) asks the daemon's start gate about every
run this launcher holds that has not started (published or not), in one read; the runs the gate
refuses are withdrawn at once: forgotten here (never published again) and reported
``NOT_STARTED``. The daemon then gives them back to their backfill with no budget spent: a
paused backfill's partitions go back to PENDING (and, on PostgreSQL, the runs leave no record,
see ``storage/execution/takebacks.py``), so that resuming publishes them again as new runs; a
canceled backfill's end CANCELED. Pause and cancel therefore withdraw published runs within
about a second, on RabbitMQ and Redis alike, however long the queue.

Neither broker can take a published message back: a withdrawn run's task stays on its queue.
When a worker takes it and asks to start it, the launcher refuses it as it refuses any attempt
it does not hold, quietly: no run record, no budget, a DEBUG line and a count
(``backfiller_launcher_withdrawn_total{what="refused"}``). The launcher remembers the latest
``REMEMBERED`` withdrawn attempts to tell those refusals from the others.
"""

from __future__ import annotations

import logging
import time

from backfiller.clock import utc_now
from backfiller.launchers.base import Outcome, StartRequest
from backfiller.launchers.celery.state import DaemonRun, Shared
from backfiller.observability import launcher_metrics

logger = logging.getLogger("backfiller.launcher")

CHECK_SECONDS = 0.5
REMEMBERED = 100_000
WITHDRAWN = "withdrawn before it started: it may no longer start"


class Withdrawals:
    """Checks the runs not started against the gate; refuses withdrawn runs' deliveries."""

    def __init__(self, shared: Shared) -> None:
        self.shared = shared
        self.checked_at = 0.0
        self.failing = False

    def check(self) -> None:
        """Withdraw the runs not started that the gate refuses (the gate's thread, about every
        ``CHECK_SECONDS``). A failing read is logged and tried again at the next check."""
        now = time.monotonic()
        if self.shared.gate is None or now - self.checked_at < CHECK_SECONDS:
            return
        self.checked_at = now
        try:
            self._check()
        except Exception:  # never the gate thread's end
            logger.exception("could not check the runs waiting on the broker")

    def _check(self) -> None:
        shared = self.shared
        gate = shared.gate
        if gate is None:
            return
        with shared.lock:
            waiting = [r for r in shared.runs.values() if r.reply is None and r.dropped is None]
        if not waiting:
            return
        at = utc_now()
        try:
            allowed = gate(
                [
                    StartRequest(r.task.run_id, r.task.attempt, at, "", r.task.backfill_id)
                    for r in waiting
                ]
            )
        except Exception as exc:
            if not self.failing:  # once per outage: the gate's own failures are logged too
                logger.warning("could not check the runs waiting on the broker (%s)", exc)
            self.failing = True
            return
        self.failing = False
        with shared.lock:
            gone = [r for r in waiting if r.task.run_id not in allowed and self._withdraw(r)]
            if gone:
                shared.signal()
        if gone:
            logger.info("withdrew %d runs that may no longer start", len(gone))
            launcher_metrics.withdrawn("withdrawn", len(gone))

    def _withdraw(self, run: DaemonRun) -> bool:
        """Forget ``run`` and report it never started (under the lock); False when it changed
        meanwhile (granted, ended)."""
        shared = self.shared
        if shared.runs.get(run.task.run_id) is not run or run.reply is not None:
            return False
        del shared.runs[run.task.run_id]
        shared.finish(run, Outcome.NOT_STARTED, WITHDRAWN)
        place = (run.queue, run.first_sequence or run.sequence)
        shared.withdrawn[(run.task.run_id, run.task.attempt)] = place
        while len(shared.withdrawn) > REMEMBERED:
            shared.withdrawn.popitem(last=False)
        return True

    def refusal(self, run_id: int, attempt: int) -> str | None:
        """Why a start request for an attempt this launcher no longer holds is refused, when
        it is a withdrawn run's task delivered late (counted, logged at DEBUG); else None."""
        if (run_id, attempt) not in self.shared.withdrawn:
            return None
        logger.debug("refused a late delivery of run %s attempt %s (withdrawn)", run_id, attempt)
        launcher_metrics.withdrawn("refused")
        return "withdrawn"
