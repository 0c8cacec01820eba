"""Who is asking (the principal of a request) and the per-token rate limiter.

Kept free of the request context so that :mod:`backfiller.resolvers.context` can hold both.
"""

from __future__ import annotations

import threading
from collections import deque
from dataclasses import dataclass
from datetime import datetime

from backfiller.resolvers.shared_rate import shared_rate_limiter_from_env
from backfiller.storage.auth_records import Role


@dataclass(frozen=True, slots=True)
class Principal:
    """The caller of one request: a token (by name and role), or everyone when auth is off."""

    name: str | None
    role: Role
    token_id: int | None = None

    @property
    def authenticated(self) -> bool:
        return self.token_id is not None


ANONYMOUS_ADMIN = Principal(name=None, role=Role.ADMIN)
"""The principal of every request under ``--auth none`` (loopback only)."""


def actor_of(principal: Principal | None, run_id: str | None) -> str | None:
    """What is recorded as the creator of what a request does.

    The token's name, and the run when a job launches through its client:
    ``"ci-token (run run_12)"``; ``"run run_12"`` without auth; None without either.
    """
    name = principal.name if principal is not None else None
    run = f"run {run_id}" if run_id else None
    if name and run:
        return f"{name} ({run})"
    return name or run


class RateLimiter:
    """A sliding window of recent hits per (bucket, caller). Per process, thread-safe; shared
    by every API process through Redis when ``BACKFILLER_RATE_LIMIT_URL`` is set."""

    def __init__(self) -> None:
        self._hits: dict[tuple[str, str], deque[float]] = {}
        self._lock = threading.Lock()
        self._shared = shared_rate_limiter_from_env()

    def allow(self, bucket: str, caller: str, limit: int, window_s: float, now: datetime) -> bool:
        """Record a hit and return True, or return False when ``limit`` hits are in the window.

        A ``limit`` of 0 or less means no limit.
        """
        if limit <= 0:
            return True
        t = now.timestamp()
        if self._shared is not None:
            shared = self._shared.allow(bucket, caller, limit, window_s, t)
            if shared is not None:
                return shared
        with self._lock:
            hits = self._hits.setdefault((bucket, caller), deque())
            while hits and hits[0] <= t - window_s:
                hits.popleft()
            if len(hits) >= limit:
                return False
            hits.append(t)
            if len(self._hits) > 10_000:
                self._forget_idle(t - window_s)
            return True

    def _forget_idle(self, horizon: float) -> None:
        for key in [k for k, v in self._hits.items() if not v or v[-1] <= horizon]:
            del self._hits[key]
