"""Schedules the daemon's tasks. It only schedules: the work is in the ticks.

Each task is an async callable without arguments, registered with an interval::

    daemon.loop.every(30.0, "triggers", lambda: evaluate_triggers(daemon.database, ...))

That one line is all it takes to add a periodic task (trigger evaluation, cleanups, ...).
An interval of 0 runs the task on every pass of the loop. A pass runs the due tasks in the
order they were registered, one at a time, so tasks never run concurrently with each other.
Busy passes are paced to at least ``min_pass_seconds`` so that results and claims come in
batches. After a pass in which no task reported work (a falsy result, or a ``TickReport`` whose
``busy`` is False), the loop sleeps until the next task is due, at most ``idle_seconds``, or
until :meth:`Loop.wake` is called (thread-safe: the launcher calls it when runs report).
:meth:`Loop.run_soon` makes one task due at once (the daemon's launch watch: a new backfill).

A task that raises is logged and retried after an exponential back-off (1 s, 2 s, ... up to its
``max_backoff``, 30 s by default); the other tasks keep running. :meth:`Loop.retry_all_now`
ends every back-off (the daemon calls it when its lease is renewed after an outage, so that it
resumes at once instead of idling out the back-offs).

With tracing on, a pass of a task that speaks to the database is one span, ``tick <task>``,
with its statements under it (:func:`backfiller.observability.tracing.tick`).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from backfiller.observability import tracing
from backfiller.observability.daemon_metrics import observe_task

logger = logging.getLogger("backfiller.daemon")

Task = Callable[[], Awaitable[object]]

MAX_BACKOFF_SECONDS = 30.0


@dataclass
class _Entry:
    name: str
    seconds: float
    task: Task
    next_at: float = 0.0
    failures: int = 0
    max_backoff: float = MAX_BACKOFF_SECONDS


class Loop:
    def __init__(self, idle_seconds: float = 0.2, min_pass_seconds: float = 0.01) -> None:
        self.idle_seconds = idle_seconds
        self.min_pass_seconds = min_pass_seconds
        self._entries: list[_Entry] = []
        self._event: asyncio.Event | None = None
        self._loop: asyncio.AbstractEventLoop | None = None

    def every(
        self, seconds: float, name: str, task: Task, max_backoff: float = MAX_BACKOFF_SECONDS
    ) -> None:
        """Run ``task`` every ``seconds`` (0: on every pass of the loop)."""
        self._entries.append(_Entry(name, seconds, task, max_backoff=max_backoff))

    def retry_all_now(self) -> None:
        """End the back-off of every failing task: they run on the next pass."""
        for entry in self._entries:
            if entry.failures:
                entry.failures = 0
                entry.next_at = 0.0

    def run_soon(self, name: str) -> None:
        """Make the task ``name`` due now and start the next pass (on the loop's thread)."""
        for entry in self._entries:
            if entry.name == name and not entry.failures:
                entry.next_at = 0.0
        self.wake()

    def wake(self) -> None:
        """Start the next pass now. Safe to call from any thread."""
        loop, event = self._loop, self._event
        if loop is None or event is None:
            return
        with contextlib.suppress(RuntimeError):  # the loop is closed
            loop.call_soon_threadsafe(event.set)

    async def run_once(self) -> bool:
        """One pass over the due tasks; whether any of them did something."""
        busy = False
        for entry in self._entries:
            now = time.monotonic()
            if entry.next_at > now:
                continue
            try:
                with tracing.tick(entry.name):  # its statements under one span
                    result = await entry.task()
            except asyncio.CancelledError:
                raise
            except Exception:
                observe_task(entry.name, time.monotonic() - now, False)
                entry.failures += 1
                delay = min(entry.max_backoff, 2.0 ** (entry.failures - 1))
                logger.exception("daemon task %r failed; next try in %.0f s", entry.name, delay)
                entry.next_at = time.monotonic() + delay
                continue
            observe_task(entry.name, time.monotonic() - now, True)
            entry.failures = 0
            entry.next_at = now + entry.seconds
            busy = busy or bool(getattr(result, "busy", result))
        return busy

    async def run(self, stop: asyncio.Event) -> None:
        """Pass over the tasks until ``stop`` is set."""
        self._loop = asyncio.get_running_loop()
        self._event = asyncio.Event()
        while not stop.is_set():
            self._event.clear()
            began = time.monotonic()
            busy = await self.run_once()
            # Pace busy passes a little, so that results and claims come in batches.
            pause = self.min_pass_seconds - (time.monotonic() - began)
            if busy or stop.is_set():
                await asyncio.sleep(max(0.0, pause))
                continue
            now = time.monotonic()
            due = min((e.next_at for e in self._entries if e.seconds > 0), default=now + 1)
            timeout = max(0.0, min(self.idle_seconds, due - now))
            waiter = asyncio.ensure_future(self._event.wait())
            stopper = asyncio.ensure_future(stop.wait())
            try:
                await asyncio.wait(
                    {waiter, stopper}, timeout=timeout, return_when="FIRST_COMPLETED"
                )
            finally:
                waiter.cancel()
                stopper.cancel()
