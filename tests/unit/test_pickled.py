"""The pipe messages pickle by position (``backfiller/pickled.py``) and come back equal."""

from __future__ import annotations

import pickle
from dataclasses import dataclass, field
from datetime import UTC, datetime

import pytest

from backfiller.domain import Outcome, RunFinished
from backfiller.launchers.base import LogLine, RunLogs, RunStarted, RunTask, StartCheck
from backfiller.launchers.messages import Done, Gated, Logs, Started
from backfiller.pickled import by_position

NOW = datetime(2026, 6, 15, 12, 0, tzinfo=UTC)
TASK = RunTask(
    run_id=7,
    backfill_id=3,
    job_name="daily",
    partition_key="2026-01-01",
    attempt=2,
    run_config={"a": [1, 2]},
    tags={"team": "data"},
    partition_start=NOW,
    partition_end=NOW,
    timeout_seconds=5.0,
    credential="secret",
    trace_parent="00-abc-def-01",
    partition_keys=("2026-01-01", "2026-01-02"),
)
LINES = (LogLine(NOW, "INFO", "hello"), LogLine(NOW, "ERROR", "ünïcode"))
END = RunFinished(7, NOW, Outcome.ERROR, "boom", "trace", "host:1", 2)


@pytest.mark.parametrize(
    "message",
    [
        TASK,
        Gated(TASK, StartCheck("sqlite:///x.db", "daemon-1")),
        Started(7, NOW, 2),
        Logs(7, LINES),
        Done(END, LINES),
        Done(RunFinished(8, NOW, Outcome.SUCCESS)),
        RunStarted(7, NOW, "host:1", 2),
        RunLogs(7, LINES),
    ],
)
def test_a_message_comes_back_equal_through_pickle(message: object) -> None:
    for protocol in (pickle.DEFAULT_PROTOCOL, pickle.HIGHEST_PROTOCOL):
        back = pickle.loads(pickle.dumps(message, protocol=protocol))
        assert back == message and type(back) is type(message)


def test_a_field_outside_init_is_refused() -> None:
    with pytest.raises(TypeError, match="__init__"):

        @by_position
        @dataclass(frozen=True)
        class Odd:
            a: int
            b: list[int] = field(default_factory=list, init=False)
