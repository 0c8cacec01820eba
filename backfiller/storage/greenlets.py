"""SQLAlchemy's synchronous core run from the event loop, on greenlets used again and again.

``sqlalchemy.util.greenlet_spawn`` starts a new greenlet for every call, and each new
greenlet gets a new chunk of memory for its Python frames, mapped from the system and given
back when the greenlet ends: two system calls and several page faults for every transaction
and every read, a few percent of a launch. :func:`run_sync` does what ``greenlet_spawn``
does (``fn`` runs in a greenlet of SQLAlchemy's kind, so that ``await_`` inside it waits on
the event loop; in the caller's ``contextvars`` context; its result or exception handed back)
on a greenlet that, once ``fn`` has returned, waits for the next call instead of ending. Idle
greenlets are kept per thread (a greenlet belongs to the thread that made it).
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Callable
from typing import Any, TypeVar

from greenlet import GreenletExit, getcurrent, greenlet

T = TypeVar("T")

MAX_IDLE = 16
"""Idle greenlets kept per thread; more run at once only when as many calls wait at once."""


class _Done:
    __slots__ = ("value",)

    def __init__(self, value: Any) -> None:
        self.value = value


class _Failed:
    __slots__ = ("error",)

    def __init__(self, error: BaseException) -> None:
        self.error = error


class _Worker(greenlet):  # type: ignore[misc]
    """Runs one call after another; between calls it waits in ``parent.switch``. A call and
    its outcome pass through attributes, so that an idle worker holds neither the last
    call's function and arguments nor its result."""

    __sqlalchemy_greenlet_provider__ = True  # what SQLAlchemy's ``await_`` looks for

    def __init__(self) -> None:
        super().__init__(self._serve)
        self.call: tuple[Callable[..., Any], tuple[Any, ...]] | None = None
        self.outcome: _Done | _Failed | None = None

    def _serve(self) -> None:
        while True:
            assert self.call is not None
            fn, args = self.call
            self.call = None
            try:
                self.outcome = _Done(fn(*args))
            except GreenletExit:
                raise  # the greenlet itself is being thrown away
            except BaseException as error:  # handed to the caller, as greenlet_spawn does
                self.outcome = _Failed(error)
            del fn, args
            self.parent.switch()


_idle = threading.local()


async def run_sync(fn: Callable[..., T], *args: Any) -> T:
    """``fn(*args)`` in a greenlet from which SQLAlchemy's ``await_`` may wait on the loop."""
    idle: list[_Worker] = _idle.__dict__.setdefault("workers", [])
    worker = idle.pop() if idle else _Worker()
    driver = getcurrent()
    worker.parent = driver
    worker.gr_context = driver.gr_context
    worker.call = (fn, args)
    awaited: Any = worker.switch()
    while worker.outcome is None:
        try:
            value = await awaited  # an awaitable that ``await_`` handed over
        except BaseException:
            awaited = worker.throw(*sys.exc_info())
        else:
            awaited = worker.switch(value)
    outcome, worker.outcome = worker.outcome, None
    worker.gr_context = None
    if len(idle) < MAX_IDLE:
        idle.append(worker)
    if isinstance(outcome, _Failed):
        raise outcome.error
    return outcome.value  # type: ignore[no-any-return]
