"""Who is asking (the principal of a request) and the per-token rate limiter.

Kept free of the request context so that :mod:`backfiller.resolvers.context` can hold both.
"""

from __future__ import annotations

import threading
from collections import deque
from dataclasses import dataclass
from datetime import datetime

from backfiller import ids
from backfiller.domain.roles import Role
from backfiller.resolvers.shared_rate import shared_rate_limiter_from_env


@dataclass(frozen=True, slots=True)
class Principal:
    """The caller of one request: a token (by name and role), or everyone when auth is off.

    A run's own credential is a principal too: ``run_id`` and ``backfill_id`` say which run,
    ``name`` is the token that launched its backfill (None when that was done without auth).
    """

    name: str | None
    role: Role
    token_id: int | None = None
    jobs: frozenset[str] | None = None
    """The jobs this token may launch; None for every job."""
    run_id: int | None = None
    backfill_id: int | None = None
    session_id: int | None = None
    """A person signed in with OpenID Connect (``web/sessions.py``): the session's id."""
    team: str | None = None
    """The team it acts for: its token's, its session's (the OpenID team claim), or for a
    run's credential the token's that launched the run. What it launches acts for this team."""

    @property
    def authenticated(self) -> bool:
        return self.token_id is not None or self.run_id is not None or self.session_id is not None

    def may_launch(self, job_name: str) -> bool:
        return self.jobs is None or job_name in self.jobs


ANONYMOUS_ADMIN = Principal(name=None, role=Role.ADMIN)
"""The principal of every request under ``--auth none`` (loopback only)."""


def actor_of(principal: Principal | None) -> str | None:
    """What is recorded as the creator of what a request does (backfills, events, trigger
    evaluations): the token's name; for a run's credential, the run too:
    ``"ci-token (run run_12 of bf_3)"``, or ``"run run_12 of bf_3"`` when no token launched it.

    The audit log keeps the two apart: the token's name as the actor, the run in a field of its
    own (see :func:`run_of`).
    """
    if principal is None:
        return None
    run = run_of(principal)
    if run is None:
        return principal.name
    where = f"run {run} of bf_{principal.backfill_id}"
    return f"{principal.name} ({where})" if principal.name else where


def run_of(principal: Principal | None) -> str | None:
    """The public id of the run a request comes from (only from a run credential)."""
    if principal is None or principal.run_id is None:
        return None
    return ids.run_id(principal.run_id)


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

    def retry_after(self, bucket: str, caller: str, window_s: float, now: datetime) -> float:
        """Seconds until the oldest hit of (bucket, caller) leaves the window (0 when none)."""
        with self._lock:
            hits = self._hits.get((bucket, caller))
            if not hits:
                return 0.0
            return max(0.0, hits[0] + window_s - now.timestamp())

    def _forget_idle(self, horizon: float) -> None:
        for key in [k for k, v in self._hits.items() if not v or v[-1] <= horizon]:
            del self._hits[key]
