"""What the daemon and the Celery workers say to each other over the broker.

The run itself travels as a Celery task (``backfiller.run``) on the job's queue: the task's
arguments are the run (``task_message``), or several runs of one job whose runs are short, run
one after another. Everything else travels on two exchanges of Backfiller's own, as small JSON
messages:

- ``backfiller.control`` (direct): each daemon consumes a durable queue named after its lease
  owner, and each worker process an auto-deleted queue of its own; the routing key is the queue
  name. Workers send start requests, heartbeats, log lines and results to the daemon that
  submitted the run; the daemon answers start requests and sends cancels to the worker that
  holds the run.
- ``backfiller.leases.<key id>`` (fanout, one per shared key: see :mod:`.envelope`): every
  daemon announces, about once a second, until when its runs may go on executing
  (``stop_by``, wall-clock UTC) and which of its runs must stop now.
  A worker kills a run that reaches its daemon's ``stop_by`` without a newer announcement.

Message kinds (the ``t`` field):

=============== ================ =========================================================
kind            from -> to       fields
=============== ================ =========================================================
``start``       worker -> daemon ``run``, ``attempt``, ``worker``, ``reply``, ``until``
``grant``       daemon -> worker ``run``, ``attempt``, ``ok``, ``stop_by``
``beat``        worker -> daemon ``run``, ``attempt``
``logs``        worker -> daemon ``run``, ``attempt``, ``lines``
``end``         worker -> daemon ``run``, ``attempt``, ``outcome``, ``error``, ``trace``,
                                 ``worker``, ``at``, ``started`` (when its start was
                                 granted), ``lines``, ``next`` (optional: the start
                                 request of the next run of the same task)
``undelivered`` worker -> daemon ``run``, ``attempt`` (gave up before starting: resend it)
``cancel``      daemon -> worker ``run``, ``attempt``
``lease``       daemon -> all    ``owner``, ``stop_by``, ``drop`` (list of [run, attempt])
=============== ================ =========================================================

Times are POSIX timestamps (seconds, UTC): the daemons' and workers' clocks must agree to well
under a second (NTP), as for any lease.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

from backfiller.clock import utc_now
from backfiller.launchers.base import LogLine, Outcome, RunFinished, RunTask

TASK_NAME = "backfiller.run"
DEFAULT_QUEUE = "backfiller"
CONTROL_EXCHANGE = "backfiller.control"
LEASE_EXCHANGE = "backfiller.leases"
BROKER_ENV = "BACKFILLER_BROKER_URL"
QUEUE_ENV = "BACKFILLER_CELERY_QUEUE"
"""Names the queue of jobs that name none (default ``backfiller``): deployments sharing a
broker each set their own, for daemons and workers alike."""


def default_queue() -> str:
    return os.environ.get(QUEUE_ENV) or DEFAULT_QUEUE


BEAT_SECONDS = 1.0
"""How often a worker reports that its run is alive, and a daemon announces its lease."""
PRESENCE_SECONDS = 3.0
"""How often an idle worker process tells each daemon it hears that it is there (``here``),
so that ``backfiller_launcher_workers_ready`` counts it (busy ones send heartbeats). Keep
daemons' ``--heartbeat-timeout`` above it."""
GRANT_WAIT_SECONDS = 60.0
"""How long a worker waits for the answer to a start request before handing the run back."""
DAEMON_QUEUE_EXPIRES_SECONDS = 7 * 24 * 3600.0
"""A daemon's queue left without consumers is deleted after this long (RabbitMQ only)."""


def daemon_queue(owner: str) -> str:
    return f"backfiller.daemon.{owner}"


def worker_name() -> str:
    """``host:pid`` of this process, as ``Run.worker`` shows it."""
    import socket

    return f"{socket.gethostname()}:{os.getpid()}"


def timestamp(at: datetime) -> float:
    return at.timestamp()


def from_timestamp(value: float) -> datetime:
    return datetime.fromtimestamp(value, UTC)


def task_message(task: RunTask, owner: str) -> dict[str, Any]:
    """The Celery task's one argument: the run, and where to report about it."""
    return {
        "run": task.run_id,
        "backfill": task.backfill_id,
        "job": task.job_name,
        "partition": task.partition_key,
        "attempt": task.attempt,
        "config": dict(task.run_config),
        "tags": dict(task.tags),
        "start": None if task.partition_start is None else timestamp(task.partition_start),
        "end": None if task.partition_end is None else timestamp(task.partition_end),
        "timeout": task.timeout_seconds,
        "owner": owner,
        # The run's own bearer token for context.client, encrypted when sealed (envelope.py)
        "credential": task.credential,
        "trace_parent": task.trace_parent,
        "partitions": list(task.partition_keys),
    }


def task_from_message(message: Mapping[str, Any]) -> RunTask:
    start, end = message.get("start"), message.get("end")
    return RunTask(
        run_id=int(message["run"]),
        backfill_id=int(message["backfill"]),
        job_name=str(message["job"]),
        partition_key=str(message["partition"]),
        attempt=int(message["attempt"]),
        run_config=dict(message.get("config") or {}),
        tags={str(k): str(v) for k, v in (message.get("tags") or {}).items()},
        partition_start=None if start is None else from_timestamp(float(start)),
        partition_end=None if end is None else from_timestamp(float(end)),
        timeout_seconds=None if message.get("timeout") is None else float(message["timeout"]),
        credential=message.get("credential"),
        trace_parent=message.get("trace_parent"),
        partition_keys=tuple(str(k) for k in message.get("partitions") or ()),
    )


def task_id(task: RunTask, runs: int = 1) -> str:
    """The Celery task id: its first run and that run's attempt (the fencing token), and how
    many runs follow in the same task."""
    name = f"run-{task.run_id}-{task.attempt}"
    return name if runs == 1 else f"{name}+{runs - 1}"


def log_lines(raw: Any) -> tuple[LogLine, ...]:
    """The lines of a ``logs`` or ``end`` message (``[[at, level, message], ...]``); a
    malformed line is left out."""
    lines: list[LogLine] = []
    for item in raw or []:
        with contextlib.suppress(TypeError, ValueError, IndexError):
            lines.append(LogLine(from_timestamp(float(item[0])), str(item[1]), str(item[2])))
    return tuple(lines)


def wire_lines(lines: Sequence[LogLine]) -> list[list[Any]]:
    """Log lines as ``logs`` and ``end`` messages carry them: ``[[at, level, message], ...]``."""
    return [[timestamp(line.at), line.level, line.message] for line in lines]


def finished_from_message(
    body: Mapping[str, Any], run_id: int, attempt: int, worker: str | None = None
) -> RunFinished:
    """The end of a run as an ``end`` message tells it (``worker``: if the message names none)."""
    try:
        outcome = Outcome(str(body.get("outcome")))
    except ValueError:
        outcome = Outcome.ERROR
    at = body.get("at")
    return RunFinished(
        run_id,
        from_timestamp(float(at)) if at else utc_now(),
        outcome,
        body.get("error"),
        body.get("trace"),
        str(body.get("worker") or worker or "") or None,
        attempt,
    )
