"""Jobs of the Celery launcher's acceptance tests, run by real Celery worker processes.

``recorded`` writes one line per execution to ``$BACKFILLER_TEST_MARKS/<partition>``, holding
an exclusive ``flock`` on that file for the whole execution: a second execution of the same
partition at the same time cannot take the lock and writes an ``OVERLAP`` file instead.
"""

from __future__ import annotations

import fcntl
import os
import signal
import socket
import subprocess
import time
from pathlib import Path

from backfiller import DailyPartitions, Definitions, RetryPolicy, RunContext, job

DAYS = DailyPartitions(start="2000-01-01", end="2030-01-01")
SECONDS = {
    "type": "object",
    "properties": {"seconds": {"type": "number", "minimum": 0}},
    "additionalProperties": False,
}


def _folder() -> Path:
    return Path(os.environ["BACKFILLER_TEST_MARKS"])


@job(partitions=DAYS, config=SECONDS)
def recorded(context: RunContext) -> None:
    """Holds a lock on its partition's file while it sleeps, and records the execution."""
    _record(context, float(context.run_config.get("seconds", 0.0)))


TRACED = {
    "type": "object",
    "properties": {
        "seconds": {"type": "number", "minimum": 0},
        "spread": {"type": "number", "minimum": 0},
    },
    "additionalProperties": False,
}


@job(partitions=DAYS, config=TRACED)
def traced(context: RunContext) -> None:
    """``recorded``, marking also that its body began (``began-<run id>``): a run killed before
    its end executed all the same. Sleeps ``seconds``, plus ``spread`` times the day of the
    month modulo 3 (``seconds=1, spread=1``: 1 to 3 s)."""
    (_folder() / f"began-{context.run_id}").touch()
    config = context.run_config
    spread = float(config.get("spread", 0.0)) * (int(context.partition_key[-2:]) % 3)
    # No log line after its mark: shipping one may wait for the broker (see issue 31's notes).
    _record(context, float(config.get("seconds", 0.0)) + spread, done_line=False)


def _record(context: RunContext, seconds: float, done_line: bool = True) -> None:
    path = _folder() / context.partition_key
    with open(path, "a") as f:
        try:
            fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            (_folder() / f"OVERLAP-{context.partition_key}-{os.getpid()}").touch()
            fcntl.flock(f, fcntl.LOCK_EX)
        context.log.info("running %s", context.partition_key)
        time.sleep(seconds)
        f.write(f"{context.run_id} {context.attempt} {socket.gethostname()}:{os.getpid()}\n")
        f.flush()
        if done_line:
            context.log.info("done %s", context.partition_key)  # shipped with the run's end


@job(partitions=DAYS, queue=os.environ.get("BACKFILLER_TEST_GPU_QUEUE", "gpu"))
def on_gpu(context: RunContext) -> None:
    """Runs only on workers listening on the ``gpu`` queue."""
    (_folder() / f"gpu-{context.partition_key}").write_text(f"{os.getpid()}\n")


@job(partitions=DAYS, timeout_seconds=1.0)
def too_slow(context: RunContext) -> None:
    """Outlives its 1 s timeout."""
    context.log.info("starting a long sleep")
    time.sleep(60)


@job(partitions=DAYS, retry=RetryPolicy(max_retries=1), config=SECONDS)
def sleepy(context: RunContext) -> None:
    """Writes its pid; its first attempt then sleeps (default 60 s), to be canceled or killed."""
    (_folder() / f"pid-{context.partition_key}-{context.attempt}").write_text(str(os.getpid()))
    if context.attempt == 1:
        time.sleep(float(context.run_config.get("seconds", 60.0)))
    (_folder() / f"done-{context.partition_key}-{context.attempt}").touch()


STALL = {
    "type": "object",
    "properties": {"stall": {"type": "string"}, "stubborn": {"type": "boolean"}},
    "additionalProperties": False,
}


@job(partitions=DAYS, config=STALL, lost_worker_retries=0, timeout_seconds=5.0)
def stalls(context: RunContext) -> None:
    """Short: records its execution at once, but the partition named by ``stall`` writes its
    pid and sleeps 60 s first (to be killed, or to time out after 5 s; ``stubborn``: ignoring
    SIGTERM, so that its worker kills its process). No retries, not even of a lost run."""
    key = context.partition_key
    if key == context.run_config.get("stall"):
        if context.run_config.get("stubborn"):
            signal.signal(signal.SIGTERM, signal.SIG_IGN)
        (_folder() / f"stall-{key}").write_text(str(os.getpid()))
        time.sleep(60)
    with open(_folder() / key, "a") as f:
        f.write(f"{context.run_id} {context.attempt} {socket.gethostname()}:{os.getpid()}\n")


@job(partitions=DAYS)
def noop(context: RunContext) -> None:
    """Does nothing."""


STUBBORN = {
    "type": "object",
    "properties": {"stubborn": {"type": "string"}},
    "additionalProperties": False,
}


def _parent(context: RunContext) -> None:
    """Starts three child processes that sleep 30 s: ``sleep``, a ``sleep`` that ignores
    SIGTERM, and a shell whose own ``sleep`` child is the job's grandchild; writes their pids
    to ``children-<partition>`` (one a line), then sleeps 60 s. The partition named by
    ``stubborn`` ignores SIGTERM itself (its worker kills it at the end of the grace)."""
    key = context.partition_key
    folder = _folder()
    deaf, grand = folder / f"deaf-{key}", folder / f"grandchild-{key}"
    kids = [
        subprocess.Popen(["sleep", "30"]),
        subprocess.Popen(["sh", "-c", f"trap '' TERM; echo ready > {deaf}; exec sleep 30"]),
        subprocess.Popen(
            ["sh", "-c", f"sleep 30 & echo $! > {grand}.t; mv {grand}.t {grand}; wait"]
        ),
    ]
    while not (deaf.exists() and grand.exists()):
        time.sleep(0.01)
    pids = [kid.pid for kid in kids] + [int(grand.read_text())]
    if key == context.run_config.get("stubborn"):
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
    (folder / f"children-{key}").write_text("".join(f"{pid}\n" for pid in pids))
    time.sleep(60)


@job(partitions=DAYS, config=STUBBORN, lost_worker_retries=0)
def parent(context: RunContext) -> None:
    """Starts children and waits (to be canceled)."""
    _parent(context)


@job(partitions=DAYS, config=STUBBORN, timeout_seconds=3.0)
def parent_times_out(context: RunContext) -> None:
    """Starts children and waits past its 3 s timeout."""
    _parent(context)


definitions = Definitions(
    jobs=[recorded, traced, on_gpu, too_slow, sleepy, stalls, noop, parent, parent_times_out]
)
