"""When the Celery launcher takes a run for overtaken, and publishes it again (``dispatch``).

The launcher's own state, driven by hand: runs published in order on one queue, start requests
as the inbox notes them. No broker: what is checked is the decision alone.
"""

from __future__ import annotations

from backfiller.launchers.base import Outcome, RunTask
from backfiller.launchers.celery.dispatch import OVERTAKEN_SECONDS, republish_if_overtaken
from backfiller.launchers.celery.inbox import Inbox
from backfiller.launchers.celery.state import DaemonRun, Shared
from backfiller.launchers.celery.withdraw import Withdrawals


def shared_with(count: int, per_task: int = 1) -> tuple[Shared, list[DaemonRun]]:
    """``count`` runs published in order on one queue, ``per_task`` to a task."""
    shared = Shared(owner="d", heartbeat_timeout=20.0)
    runs = []
    for index in range(count):
        task = RunTask(index + 1, 1, "job", f"k{index}", 1, {}, {})
        run = DaemonRun(task, "q", "d", published=True)
        shared.sequence += 1
        run.sequence = run.first_sequence = shared.sequence
        shared.runs[task.run_id] = run
        runs.append(run)
    for start in range(0, count, per_task):
        batch = runs[start : start + per_task]
        for run in batch:
            run.mates = batch
    return shared, runs


def ask(shared: Shared, run: DaemonRun) -> None:
    """A start request for ``run`` reaches the daemon (as the inbox notes it)."""
    body = {"t": "start", "run": run.task.run_id, "attempt": 1, "worker": "w", "reply": "r"}
    Inbox(shared, None).events_of(body)  # type: ignore[arg-type]


def test_a_run_is_published_again_only_after_being_overtaken_for_a_while() -> None:
    shared, (first, second) = shared_with(2)
    republish_if_overtaken(shared, first, now=1000.0)  # long after its publication: waiting
    assert first.published and first.overtaken_at is None
    ask(shared, second)
    republish_if_overtaken(shared, first, now=1000.0)
    assert first.published and first.overtaken_at == 1000.0
    republish_if_overtaken(shared, first, now=1000.0 + OVERTAKEN_SECONDS - 0.1)
    assert first.published
    republish_if_overtaken(shared, first, now=1000.0 + OVERTAKEN_SECONDS)
    assert not first.published and list(shared.unpublished) == [first]


def test_a_run_whose_task_is_under_way_is_not_overtaken() -> None:
    shared, runs = shared_with(16, per_task=8)
    ask(shared, runs[8])  # the second task started elsewhere
    runs[0].reply = "worker-1"  # the first task's first run executes
    for now in (0.0, 100.0):
        republish_if_overtaken(shared, runs[1], now)
    assert runs[1].published and runs[1].overtaken_at is None
    runs[0].dropped = Outcome.WORKER_LOST  # its worker fell silent: no longer shielded
    republish_if_overtaken(shared, runs[1], 200.0)
    republish_if_overtaken(shared, runs[1], 200.0 + OVERTAKEN_SECONDS)
    assert not runs[1].published


def test_a_republished_run_s_start_counts_at_its_first_place() -> None:
    shared, runs = shared_with(3)
    ask(shared, runs[1])
    republish_if_overtaken(shared, runs[0], 0.0)
    republish_if_overtaken(shared, runs[0], OVERTAKEN_SECONDS)
    assert not runs[0].published
    shared.sequence += 1  # published again: behind the third run
    runs[0].sequence, runs[0].published = shared.sequence, True
    ask(shared, runs[0])  # the first copy asks: the third run, still on the queue, is not passed
    assert shared.asked["q"] == runs[1].sequence
    republish_if_overtaken(shared, runs[2], 100.0)
    assert runs[2].overtaken_at is None


def test_the_wait_covers_a_busy_worker_s_prefetch_of_long_runs() -> None:
    shared, (first, second) = shared_with(2)
    shared.took["job"] = 30.0  # long runs: a worker may hold a task several runs' time
    ask(shared, second)
    republish_if_overtaken(shared, first, 0.0)
    republish_if_overtaken(shared, first, 60.0)
    assert first.published
    republish_if_overtaken(shared, first, 150.0)
    assert not first.published


def test_a_withdrawn_run_s_late_request_shows_the_runs_before_it_overtaken() -> None:
    """Seen on Redis after a worker's broker cut: the tasks it held came back only with the
    visibility timeout (an hour), and the only requests afterwards were for withdrawn runs (the
    retries of runs whose late results won), refused; the held runs waited on."""
    shared, (held, retry) = shared_with(2)
    shared.gate = lambda requests: {r.run_id for r in requests if r.run_id != retry.task.run_id}
    Withdrawals(shared).check()  # the gate refuses the retry: withdrawn, forgotten
    assert retry.task.run_id not in shared.runs and held.task.run_id in shared.runs
    ask(shared, retry)  # its task is delivered all the same (a broker cannot take it back)
    republish_if_overtaken(shared, held, 0.0)
    republish_if_overtaken(shared, held, OVERTAKEN_SECONDS)
    assert not held.published and list(shared.unpublished) == [held]
