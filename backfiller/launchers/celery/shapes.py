"""What each kind of message between daemons and workers must hold, and how long it is good for.

A message's kind is its ``t`` field (see :mod:`.protocol`; the run's task is ``run``). Each
kind names the fields it needs and their types: a field may be absent when its type starts
with ``~``, and null when it ends with ``?``. Fields not listed are let through (a newer
sender may add some). A message of a kind not listed here is refused, so a new kind of
message needs an entry here as well.

The age limit is counted from the timestamp the sender sealed into the message
(:mod:`.envelope`). What may wait in a queue for a long time (a run's task behind others, a
worker's report to a dead daemon, read by the daemon that takes its runs over) is good for as
long as a daemon's queue is kept; what only matters now (heartbeats, answers, cancels, lease
announcements) for a couple of minutes at most.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from backfiller.launchers.celery.protocol import DAEMON_QUEUE_EXPIRES_SECONDS

KEPT_SECONDS = DAEMON_QUEUE_EXPIRES_SECONDS
"""Tasks and workers' reports: as long as a daemon's queue outlives it (a week). An idle
worker's ``here`` too: a daemon taking a dead one's queue over reads them, and must not warn."""
NOW_SECONDS = 120.0
"""Heartbeats, answers to start requests and cancels (a worker waits 60 s for an answer)."""
LEASE_SECONDS = 30.0
"""Lease announcements (sent every second, and published to expire after 5 s)."""


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _is_pairs(value: Any) -> bool:
    """``[[run, attempt], ...]``"""
    return isinstance(value, list) and all(
        isinstance(pair, list) and len(pair) == 2 and all(_is_int(v) for v in pair)
        for pair in value
    )


_TYPES: dict[str, Callable[[Any], bool]] = {
    "int": _is_int,
    "number": _is_number,
    "str": lambda v: isinstance(v, str),
    "bool": lambda v: isinstance(v, bool),
    "list": lambda v: isinstance(v, list),
    "dict": lambda v: isinstance(v, dict),
    "pairs": _is_pairs,
}


@dataclass(frozen=True)
class Kind:
    """One kind of message: its fields (name -> type) and how long it is good for."""

    fields: Mapping[str, str]
    max_age: float

    def problem(self, body: Mapping[str, Any]) -> str | None:
        """What is wrong with ``body`` for this kind (None: nothing)."""
        for name, spec in self.fields.items():
            optional, nullable = spec.startswith("~"), spec.endswith("?")
            type_name = spec.strip("~?")
            if name not in body:
                if optional:
                    continue
                return f"no {name!r}"
            value = body[name]
            if value is None and nullable:
                continue
            if not _TYPES[type_name](value):
                return f"{name!r} is not {type_name}"
        return None


_RUN = {"run": "int", "attempt": "int"}
START = Kind({**_RUN, "worker": "str", "reply": "str", "until": "number"}, KEPT_SECONDS)

KINDS: dict[str, Kind] = {
    "run": Kind(
        {
            **_RUN,
            "backfill": "int",
            "job": "str",
            "partition": "str",
            "config": "dict?",
            "tags": "dict?",
            "start": "number?",
            "end": "number?",
            "timeout": "number?",
            "owner": "str",
            "credential": "~str?",
            "trace_parent": "~str?",
            "partitions": "~list?",
            "grace": "~number?",
        },
        KEPT_SECONDS,
    ),
    "start": START,
    "grant": Kind(
        {**_RUN, "ok": "bool", "stop_by": "~number", "owner": "~str?", "why": "~str?"},
        NOW_SECONDS,
    ),
    "beat": Kind(_RUN, NOW_SECONDS),
    "logs": Kind({**_RUN, "lines": "list"}, KEPT_SECONDS),
    "end": Kind(
        {
            **_RUN,
            "outcome": "str",
            "error": "str?",
            "trace": "str?",
            "worker": "~str?",
            "at": "~number?",
            "started": "~number?",
            "lines": "~list?",
            "next": "~dict",
        },
        KEPT_SECONDS,
    ),
    "undelivered": Kind({**_RUN, "reply": "~str?"}, KEPT_SECONDS),
    "cancel": Kind(_RUN, NOW_SECONDS),
    "lease": Kind({"owner": "str", "stop_by": "number", "drop": "pairs"}, LEASE_SECONDS),
    "here": Kind({"worker": "str"}, KEPT_SECONDS),
}


def shape_problem(kind: Kind, body: Mapping[str, Any]) -> str | None:
    """What is wrong with ``body`` (a message of ``kind``), its start request included (an
    ``end`` may carry the next run's, see :mod:`.runner`)."""
    problem = kind.problem(body)
    following = body.get("next")
    if problem is None and isinstance(following, dict):
        if following.get("t") != "start":
            return "'next' is not a start request"
        inner = START.problem(following)
        return None if inner is None else f"next: {inner}"
    return problem
