"""The Celery daemon's count of live workers: the processes it heard from within the
heartbeat timeout (start requests, heartbeats, ends), each once."""

from __future__ import annotations

import time

from backfiller.launchers.celery.state import Shared


def test_workers_heard_within_the_heartbeat_timeout_are_counted_once() -> None:
    shared = Shared(owner="owner-1", heartbeat_timeout=10.0)
    assert shared.live_workers() == 0
    for name in ("host:1", "host:2", "host:1", "", None):
        shared.heard_from(name)
    assert shared.live_workers() == 2
    # A worker last heard from longer ago than the timeout is no longer counted.
    shared.heard["host:2"] = time.monotonic() - 11.0
    assert shared.live_workers() == 1
    assert set(shared.heard) == {"host:1"}
