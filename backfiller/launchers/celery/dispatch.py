"""Publishing runs as Celery tasks, and publishing again the ones a worker holds back.

A run goes alone in a ``backfiller.run`` task on its job's queue, or, for a job whose runs are
short (``SHORT_RUN_SECONDS`` lately), with up to ``runs_per_task`` others of the same job: they
then cost one task's messages between them, and the start request of each but the first
travels with its predecessor's end.
"""

from __future__ import annotations

import logging
import time
from typing import Any

from backfiller.launchers.celery.app import PREFETCH_MULTIPLIER
from backfiller.launchers.celery.envelope import seal
from backfiller.launchers.celery.protocol import TASK_NAME, task_id, task_message
from backfiller.launchers.celery.state import DaemonRun, Shared
from backfiller.observability import launcher_metrics

logger = logging.getLogger("backfiller.launcher")

PUBLISH_BATCH = 256
RUNS_PER_TASK = 8
"""At most this many runs of one job travel in one task, when the job's runs are short."""
SHORT_RUN_SECONDS = 0.1
"""A job whose runs have lately taken less than this (on average) is short."""
OVERTAKEN_SECONDS = 10.0
"""A run overtaken on its queue for this long (at least) is published again
(``republish_if_overtaken``)."""


class Dispatch:
    """Publishes the runs waiting in ``shared.unpublished`` (the broker's thread)."""

    def __init__(self, shared: Shared, app: Any, runs_per_task: int, grace_seconds: float) -> None:
        self.shared = shared
        self.app = app
        self.runs_per_task = max(1, runs_per_task)
        self.grace_seconds = grace_seconds

    def publish(self, producer: Any) -> bool:
        """Publish up to ``PUBLISH_BATCH`` runs (the rest on the next pass: announcements and
        answers must not wait behind a long backlog); whether some are left."""
        shared = self.shared
        with shared.lock:
            todo: list[DaemonRun] = []
            while shared.unpublished and len(todo) < PUBLISH_BATCH:
                run = shared.unpublished.popleft()
                if shared.runs.get(run.task.run_id) is run and not run.published:
                    todo.append(run)
            more = bool(shared.unpublished)
        for batch in self.batches(todo):
            self._publish_batch(producer, batch)
        return more

    def _publish_batch(self, producer: Any, batch: list[DaemonRun]) -> None:
        messages = []
        for run in batch:
            message = task_message(run.task, run.owner)
            message["grace"] = self.grace_seconds
            messages.append(seal(message, to=batch[0].queue, kind="run"))
        name = task_id(batch[0].task, len(batch))
        # Celery's own message (protocol 2) and publishing, without ``send_task``'s routing,
        # result and parent lookups; Celery's repr of the arguments costs more than the rest of
        # the message, so the task id stands for them.
        celery_message = self.app.amqp.create_task_message(
            name, TASK_NAME, messages, {}, argsrepr=f"[{name}]", kwargsrepr="{}"
        )
        self.app.amqp.send_task_message(
            producer, TASK_NAME, celery_message, queue=batch[0].queue, retry=False
        )
        shared = self.shared
        with shared.lock:
            for run in batch:
                run.published = True
                run.mates = batch
                shared.sequence += 1
                run.sequence, run.published_at = shared.sequence, time.monotonic()
                run.first_sequence = run.first_sequence or run.sequence
                run.overtaken_at = None

    def batches(self, runs: list[DaemonRun]) -> list[list[DaemonRun]]:
        """The runs in tasks: each alone, but a short job's runs up to ``runs_per_task``."""
        batches: list[list[DaemonRun]] = []
        open_batches: dict[tuple[str, str, str], list[DaemonRun]] = {}
        for run in runs:
            took = self.shared.took.get(run.task.job_name)
            if self.runs_per_task == 1 or took is None or took >= SHORT_RUN_SECONDS:
                batches.append([run])
                continue
            key = (run.queue, run.owner, run.task.job_name)
            batch = open_batches.get(key)
            if batch is None or len(batch) >= self.runs_per_task:
                batch = open_batches[key] = []
                batches.append(batch)
            batch.append(run)
        return batches

    def republish_all(self) -> None:
        """The broker connection broke: every run not started is published again (a task lost
        with the connection never started; a duplicate is refused). Under the lock."""
        shared = self.shared
        shared.unpublished.clear()
        again = 0
        for run in shared.runs.values():
            if run.reply is None:
                again += run.published
                run.published = False
                # Its copy may be lost with the connection: the new one counts.
                run.first_sequence = 0
                shared.unpublished.append(run)
        launcher_metrics.republished("reconnected", again)


def republish_mates(shared: Shared, run: DaemonRun) -> None:
    """The runs that came in one task with ``run``, lost or stopped, and that have not asked to
    start: its worker's process may be gone with them (killed), so they are published again
    (if it is not, the copy that asks second is refused). Under the lock."""
    for mate in run.mates:
        waiting = mate.reply is None and mate.published
        if waiting and mate is not run and shared.runs.get(mate.task.run_id) is mate:
            mate.published = False
            shared.unpublished.append(mate)
            launcher_metrics.republished("mates")


def republish_if_overtaken(shared: Shared, run: DaemonRun, now: float) -> None:
    """Publish a run again when runs published after it on its queue have asked to start
    while it has not, for a while: a worker holds it without running it (Redis gives a dead
    worker's prefetched tasks back only after its visibility timeout). Under the lock.

    Overtaken is normal for a while: workers take tasks ahead (``PREFETCH_MULTIPLIER`` per
    process), so a run in a busy worker's hands lets later ones start elsewhere. The wait is
    therefore counted from when it was first seen overtaken (not from its publication: a run
    queued behind many others is waiting, not lost), it is long enough for a worker to run the
    tasks it took ahead (``overtaken_wait``), and a run whose task is under way (a run of the
    same task executes: its worker is alive and comes to it) is not overtaken at all. The
    copy that asks first runs; the other is refused. The wait doubles at each republication.
    """
    overtaken = run.published and shared.asked.get(run.queue, 0) > run.sequence
    if not overtaken or _task_under_way(shared, run):
        run.overtaken_at = None
        return
    if run.overtaken_at is None:
        run.overtaken_at = now
    wait = overtaken_wait(shared, run)
    if now - run.overtaken_at < wait:
        return
    logger.debug("run %s was overtaken on its queue; publishing it again", run.task.run_id)
    launcher_metrics.republished("overtaken")
    run.republish_after = 2 * wait
    run.published = False
    run.overtaken_at = None
    shared.unpublished.append(run)


def overtaken_wait(shared: Shared, run: DaemonRun) -> float:
    """How long ``run`` may stay overtaken before it is published again: ``OVERTAKEN_SECONDS``
    (doubled at each republication), or the time its worker may take to run the tasks it took
    ahead of it (its job's recent run time), when longer."""
    took = shared.took.get(run.task.job_name, 0.0)
    ahead = (PREFETCH_MULTIPLIER + 1) * max(1, len(run.mates)) * took
    return max(run.republish_after or OVERTAKEN_SECONDS, ahead)


def _task_under_way(shared: Shared, run: DaemonRun) -> bool:
    """Whether a run of ``run``'s task executes now (granted, not dropped): its worker works
    through the task and asks for ``run`` in turn. Should that worker die, the run executing
    is dropped (no heartbeat) and its mates are published again (``republish_mates``)."""
    return any(
        mate is not run
        and mate.mates is run.mates  # not published again in another task since
        and mate.reply is not None
        and mate.dropped is None
        and shared.runs.get(mate.task.run_id) is mate
        for mate in run.mates
    )
