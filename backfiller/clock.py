"""The service's clock: what tells the time, and the one place that reads the real one."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime

Clock = Callable[[], datetime]
"""Anything that returns the current time as an aware UTC datetime (tests pass a frozen one)."""


def utc_now() -> datetime:
    """The current time, aware, in UTC."""
    return datetime.now(UTC)


__all__ = ["Clock", "utc_now"]
