"""A Celery pool process's group: the run it executes and every process that run started.

Each pool process of ``backfiller worker`` leads a process group of its own (see
:mod:`.worker`), which its jobs' child processes join (and their children, unless they leave
it). Stopping a run (cancel, timeout, a run its daemon dropped) therefore works on the group,
as the local launcher's does, whatever order the job's exit and the kill come in:

- SIGTERM goes to the whole group at once (:func:`signal_group`): the job and its children;
- if the job returns within the grace period, what is left of the group but the pool process
  itself gets SIGKILL once the grace has passed, or as soon as nothing is left
  (:func:`stop_the_rest`); the pool process then reports the run's end and takes its next run;
- if the job does not return in time, its children get SIGKILL, then the pool process (the job
  itself) with what is left of its group (``link``): Celery starts another pool process.

Only this process's group is ever signaled, and only while it leads one: a pool process that
could not start a group of its own (``setsid`` failed) stops its descendants instead, so that
a signal never reaches the Celery worker or its other pool processes. Descendants that left the
group (a child that called ``setsid``) are stopped with it while they are still descendants.

The group's members are read from ``/proc`` (Linux) or ``ps`` elsewhere.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

POLL_SECONDS = 0.05
"""How often the group is read while waiting for it to empty (a read of /proc: a few ms)."""
KILL_PATIENCE_SECONDS = 2.0
"""How long SIGKILLs are repeated for processes that keep appearing (a fork bomb's)."""


@dataclass(frozen=True, slots=True)
class Member:
    pid: int
    ppid: int
    pgid: int
    zombie: bool


def leads_group() -> bool:
    """Whether this process leads its process group (it called ``setsid``)."""
    try:
        return os.getpgid(0) == os.getpid()
    except OSError:
        return False


def _processes() -> list[Member]:
    proc = Path("/proc")
    if not proc.is_dir():
        return _processes_from_ps()
    found = []
    for stat in proc.glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
            pid, ppid, pgid = int(stat.parent.name), int(fields[1]), int(fields[2])
            found.append(Member(pid, ppid, pgid, fields[0] in "ZX"))
        except (OSError, IndexError, ValueError):
            continue  # gone meanwhile
    return found


def _processes_from_ps() -> list[Member]:
    out = subprocess.run(
        ["ps", "-A", "-o", "pid=", "-o", "ppid=", "-o", "pgid=", "-o", "stat="],
        capture_output=True,
        text=True,
        check=False,
    ).stdout
    found = []
    for line in out.splitlines():
        parts = line.split()
        if len(parts) >= 4:
            found.append(Member(int(parts[0]), int(parts[1]), int(parts[2]), parts[3][0] in "ZX"))
    return found


def others() -> list[Member]:
    """The other processes of this process's group (when it leads one) and its descendants
    (a child that started a group of its own is still one), zombies included."""
    me = os.getpid()
    everyone = _processes()
    leader = leads_group()
    found = {p.pid: p for p in everyone if leader and p.pgid == me and p.pid != me}
    below = {me}
    grew = True
    while grew:
        grew = False
        for p in everyone:
            if p.ppid in below and p.pid not in below:
                below.add(p.pid)
                found[p.pid] = p
                grew = True
    return list(found.values())


def alive() -> list[int]:
    """The live processes of the group but this one (zombies of this process are reaped)."""
    me = os.getpid()
    live = []
    for p in others():
        if not p.zombie:
            live.append(p.pid)
        elif p.ppid == me:
            with contextlib.suppress(ChildProcessError, OSError):
                os.waitpid(p.pid, os.WNOHANG)
    return live


def signal_group(signum: int) -> None:
    """Send ``signum`` to the whole group, this process included (to this process and its
    descendants when it leads no group)."""
    if leads_group():
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(os.getpid(), signum)
        return
    for pid in alive():
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, signum)
    with contextlib.suppress(ProcessLookupError):
        os.kill(os.getpid(), signum)


def kill_the_rest() -> int:
    """SIGKILL every other live process of the group, again until none is left (a process
    forked meanwhile is found at the next pass); how many were killed."""
    killed: set[int] = set()
    give_up = time.monotonic() + KILL_PATIENCE_SECONDS
    while True:
        live = alive()
        if not live or time.monotonic() > give_up:
            return len(killed)
        for pid in live:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGKILL)
            killed.add(pid)
        time.sleep(POLL_SECONDS)


def stop_the_rest(kill_at: float | None) -> int:
    """After the job returned from a stop: wait for the rest of the group to leave, until
    ``kill_at`` (monotonic, the end of the grace period), then SIGKILL what is left; how many
    had to be killed."""
    while alive():
        if kill_at is None or time.monotonic() >= kill_at:
            return kill_the_rest()
        time.sleep(POLL_SECONDS)
    return 0


def kill_group() -> None:
    """SIGKILL the whole group, this process included (its last act)."""
    if leads_group():
        with contextlib.suppress(OSError):
            os.killpg(os.getpid(), signal.SIGKILL)
    else:
        kill_the_rest()
    os.kill(os.getpid(), signal.SIGKILL)
