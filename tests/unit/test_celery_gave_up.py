"""A start granted after its worker gave up waiting (a daemon cut off from the broker), then
asked for again by that worker (issue 31: a run that executed is never recorded as never
started).

The launcher's own state, driven by hand as its threads drive it: the inbox notes the worker's
messages, the gate's thread sorts the start requests, the watch looks the runs over. No broker:
what is checked is the decision alone; the fault tests in ``tests/acceptance/celery`` cut a
real daemon off a real broker.
"""

from __future__ import annotations

import time

from backfiller.launchers.base import Outcome, RunFinished, RunTask
from backfiller.launchers.celery.grants import Grants
from backfiller.launchers.celery.inbox import Inbox
from backfiller.launchers.celery.liveness import GAVE_UP_SECONDS, Liveness
from backfiller.launchers.celery.state import DaemonRun, Shared, StartAsked

REPLY = "worker-queue"


def granted_then_given_up() -> tuple[Shared, DaemonRun]:
    """A run granted to the process behind ``REPLY`` after that process gave up waiting: its
    late note ``undelivered`` has been read."""
    shared = Shared(owner="d", heartbeat_timeout=20.0)
    run = DaemonRun(RunTask(7, 1, "job", "k", 1, {}, {}), "q", "d", published=True)
    run.reply, run.worker = REPLY, "host:1"
    run.last_beat = time.monotonic() - 30.0  # granted long ago, while the daemon was cut off
    run.fence = time.time() + 10.0
    shared.runs[7] = run
    shared.connected_at = time.monotonic() - 60.0
    note = {"t": "undelivered", "run": 7, "attempt": 1, "reply": REPLY}
    Inbox(shared, None).events_of(note)  # type: ignore[arg-type]
    assert run.gave_up_at is not None
    return shared, run


def watched_past_the_wait(shared: Shared, run: DaemonRun) -> list[RunFinished]:
    """The queue read ``GAVE_UP_SECONDS`` past the note, no heartbeat in it; the ends reported."""
    assert run.gave_up_at is not None or shared.drained_at is None
    shared.drained_at = time.monotonic() + GAVE_UP_SECONDS + 0.5
    Liveness(shared).watch()
    return [e for e in shared.events if isinstance(e, RunFinished)]


def test_a_grant_its_worker_gave_up_on_is_taken_back_as_never_started() -> None:
    shared, run = granted_then_given_up()
    (finished,) = watched_past_the_wait(shared, run)
    assert finished.outcome is Outcome.NOT_STARTED and 7 not in shared.runs


def test_the_same_worker_asking_again_runs_it_and_it_is_not_taken_back() -> None:
    shared, run = granted_then_given_up()
    # The worker took a copy of the task (published again) and asks for the same attempt: the
    # answer is yes, and its job begins, before its first heartbeat can be read.
    asked = StartAsked(7, 1, "host:1", REPLY, until=time.time() + 60.0)
    wanted = Grants(shared, "memory://")._sort([asked])
    assert wanted == []
    ((to, answer),) = list(shared.replies)
    assert to == REPLY and answer["ok"] is True and answer["run"] == 7
    assert watched_past_the_wait(shared, run) == []
    assert shared.runs[7] is run and run.dropped is None


def test_another_worker_asking_for_it_is_refused_and_it_is_still_taken_back() -> None:
    shared, run = granted_then_given_up()
    asked = StartAsked(7, 1, "host:2", "other-queue", until=time.time() + 60.0)
    assert Grants(shared, "memory://")._sort([asked]) == []
    ((to, answer),) = list(shared.replies)
    assert to == "other-queue" and answer["ok"] is False
    (finished,) = watched_past_the_wait(shared, run)
    assert finished.outcome is Outcome.NOT_STARTED
