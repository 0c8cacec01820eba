"""The event loop of the long-running commands (``serve``, ``daemon``, ``dev``).

uvloop when it is installed (``uvicorn[standard]`` installs it), as uvicorn itself chooses for
``serve --workers N`` (its ``loop="auto"``); asyncio's own loop otherwise. The one place that
starts a service's loop, so that every service runs on the same kind.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Coroutine
from typing import Any, TypeVar

T = TypeVar("T")


def loop_factory() -> Callable[[], asyncio.AbstractEventLoop] | None:
    """uvloop's loop factory, or None (asyncio's default) when uvloop is not installed."""
    try:
        import uvloop
    except ImportError:
        return None
    return uvloop.new_event_loop


def run_service(main: Coroutine[Any, Any, T]) -> T:
    """Run a service's main coroutine to its end on a new loop (see the module's docstring)."""
    with asyncio.Runner(loop_factory=loop_factory()) as runner:
        return runner.run(main)


__all__ = ["loop_factory", "run_service"]
