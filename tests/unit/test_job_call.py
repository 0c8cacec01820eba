"""A stop that reaches a Celery pool process stops its job, never what follows the job's return.

Real SIGTERMs sent by the process to itself, through ``execute`` and ``sigterm_raises`` as the
Celery runner uses them (``backfiller.launchers.celery.runner``), and the frames the handler
is given, taken where the job and its caller stand.
"""

from __future__ import annotations

import logging
import os
import signal
import sys
import time
from contextlib import AbstractContextManager
from types import FrameType

import pytest

from backfiller import Definitions, RunContext, StaticPartitions, job
from backfiller.domain import Outcome
from backfiller.launchers.base import RunTask
from backfiller.launchers.run_body import JobCall, Terminated, execute, sigterm_raises

ONE = StaticPartitions(["a"])
seen: dict[str, FrameType] = {}


def _deeper() -> None:
    seen["deeper"] = sys._getframe()


@job(partitions=ONE)
def watched(context: RunContext) -> None:
    """Keeps the frames a stop could arrive in: its own, a call below it, the frame that called
    it (run_body's ``_call_job``, which it returns to)."""
    seen["job"] = sys._getframe()
    caller = sys._getframe(1)
    while caller.f_back is not None and caller.f_code.co_name != "_call_job":
        caller = caller.f_back  # past the job definition's own __call__
    seen["caller"] = caller
    _deeper()


@job(partitions=ONE)
def stopped_midway(context: RunContext) -> None:
    """Is sent a SIGTERM while it still has work to do."""
    os.kill(os.getpid(), signal.SIGTERM)
    time.sleep(2.0)  # not reached: the stop raises inside the job
    context.log.info("finished")


@job(partitions=ONE)
def quick(context: RunContext) -> None:
    """Returns at once."""


DEFINITIONS = Definitions(jobs=[watched, stopped_midway, quick])


def _task(name: str) -> RunTask:
    return RunTask(1, 1, name, "a", 1, {}, {})


def _stop_only(call: JobCall) -> AbstractContextManager[None]:
    return sigterm_raises(unless=lambda frame: not call.interruptible(frame))


def test_a_stop_interrupts_the_job_and_whatever_it_calls_but_not_its_return() -> None:
    call = JobCall()
    assert call.interruptible(sys._getframe())  # not called yet: a stop stops it first
    outcome = execute(DEFINITIONS, _task("watched"), logging.NullHandler(), None, None, call)
    assert outcome == (Outcome.SUCCESS, None, None)
    assert call.interruptible(seen["job"])
    assert call.interruptible(seen["deeper"])
    assert not call.interruptible(seen["caller"])  # the call's own frame: the job returned
    assert not call.interruptible(sys._getframe())  # after it, in its caller


def test_a_sigterm_during_the_job_ends_it_with_the_stop() -> None:
    call = JobCall()
    began = time.monotonic()
    with _stop_only(call):
        outcome = execute(
            DEFINITIONS,
            _task("stopped_midway"),
            logging.NullHandler(),
            None,
            lambda: Outcome.CANCELED,
            call,
        )
    assert outcome == (Outcome.CANCELED, "canceled", None)
    assert time.monotonic() - began < 1.5  # the sleep was interrupted


def test_a_sigterm_after_the_job_returned_leaves_its_success() -> None:
    call = JobCall()
    with _stop_only(call):
        outcome = execute(
            DEFINITIONS, _task("quick"), logging.NullHandler(), None, lambda: Outcome.CANCELED, call
        )
        os.kill(os.getpid(), signal.SIGTERM)  # the stop that arrives as the job returned
        time.sleep(0.05)  # its handler runs here, after the job: it does not raise
    assert outcome == (Outcome.SUCCESS, None, None)


def test_a_sigterm_before_the_job_is_called_stops_it_there() -> None:
    call = JobCall()
    with pytest.raises(Terminated), _stop_only(call):
        os.kill(os.getpid(), signal.SIGTERM)
        time.sleep(1.0)
    assert not call.called
