"""Database connection pool usage, from SQLAlchemy's pool events (every pool of the process)."""

from __future__ import annotations

from typing import Any

from prometheus_client import Counter, Gauge
from sqlalchemy import event
from sqlalchemy.pool import Pool

POOL_IN_USE = Gauge(
    "backfiller_db_pool_connections_in_use",
    "Database connections checked out of the pools of this process.",
    multiprocess_mode="livesum",
)
POOL_CHECKOUTS = Counter(
    "backfiller_db_pool_checkouts_total", "Database connections taken from a pool."
)
POOL_CONNECTS = Counter(
    "backfiller_db_pool_connects_total", "New database connections opened by a pool."
)

_installed = False


def _on_checkout(*_: Any) -> None:
    POOL_IN_USE.inc()
    POOL_CHECKOUTS.inc()


def _on_checkin(*_: Any) -> None:
    POOL_IN_USE.dec()


def _on_connect(*_: Any) -> None:
    POOL_CONNECTS.inc()


def install() -> None:
    """Listen to every pool of this process (idempotent)."""
    global _installed
    if _installed:
        return
    _installed = True
    event.listen(Pool, "checkout", _on_checkout)
    event.listen(Pool, "checkin", _on_checkin)
    event.listen(Pool, "connect", _on_connect)
