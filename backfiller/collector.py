"""Python's cyclic garbage collector while a Backfiller process starts.

A process builds, as it starts, what it keeps for its whole life: modules, classes, the
GraphQL schema, SQLAlchemy's mappers (several hundred thousand objects). With Python's
default thresholds the collector runs some 270 times during a server's start, its older
generations scanning that growing heap again and again: about a tenth of the start's CPU
(docs/benchmarks.md, "Process starts"). A command that becomes a long-running process calls
:func:`starting` first: young collections then wait for 50,000 new objects instead of 700.
Once the process has built what it keeps, :func:`started` moves all of it into the
permanent generation (``gc.freeze``: later collections never scan it again) and restores the
thresholds, so the running process collects as Python would.

Only the commands' processes call these (``backfiller`` with a server-side command, the
server process): importing ``backfiller`` in a user's own program changes nothing.
"""

from __future__ import annotations

import gc

START_THRESHOLD = 50_000

_saved: tuple[int, int, int] | None = None


def starting() -> None:
    """Collect young objects rarely until :func:`started` (a second call does nothing)."""
    global _saved
    if _saved is None:
        _saved = gc.get_threshold()
        gc.set_threshold(START_THRESHOLD, _saved[1], _saved[2])


def started() -> None:
    """Freeze what the start made and collect as before (nothing if not :func:`starting`)."""
    global _saved
    if _saved is not None:
        gc.freeze()
        gc.set_threshold(*_saved)
        _saved = None


__all__ = ["START_THRESHOLD", "started", "starting"]
