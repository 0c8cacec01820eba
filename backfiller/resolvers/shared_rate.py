"""A rate limiter shared by every API process: a sliding window per (bucket, caller) in Redis.

Set ``BACKFILLER_RATE_LIMIT_URL=redis://host:6379/0`` on every ``serve`` process and a token's
launches are counted across all of them (M replicas behind a load balancer allow the configured
rate, not M times it). Each hit is one atomic Lua script: drop the hits older than the window,
count the rest, record this one if under the limit. Keys are ``<prefix>:rate:<bucket>:<caller>``
(``BACKFILLER_RATE_LIMIT_PREFIX``, default ``backfiller``) and expire with their window.

When Redis cannot be reached, the process falls back to its own window (and logs it): a limit
that briefly holds per process beats refusing every launch.
"""

from __future__ import annotations

import logging
import os
import time
import uuid
from typing import Any

logger = logging.getLogger("backfiller.api")

URL_ENV = "BACKFILLER_RATE_LIMIT_URL"
PREFIX_ENV = "BACKFILLER_RATE_LIMIT_PREFIX"
RETRY_SECONDS = 5.0

_SLIDING_WINDOW = """
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', ARGV[1] - ARGV[2])
if redis.call('ZCARD', KEYS[1]) >= tonumber(ARGV[3]) then
  return 0
end
redis.call('ZADD', KEYS[1], ARGV[1], ARGV[4])
redis.call('PEXPIRE', KEYS[1], math.ceil(ARGV[2] * 1000))
return 1
"""


class RedisRateLimiter:
    """Sliding windows in Redis (see the module's docstring)."""

    def __init__(self, url: str, prefix: str = "backfiller") -> None:
        import redis

        self.client: Any = redis.Redis.from_url(url, socket_timeout=1, socket_connect_timeout=1)
        self.prefix = prefix
        self._script: Any = self.client.register_script(_SLIDING_WINDOW)
        self._down_until = 0.0

    def allow(
        self, bucket: str, caller: str, limit: int, window_s: float, at: float
    ) -> bool | None:
        """Record a hit; whether it is allowed, or None when Redis is out of reach."""
        if time.monotonic() < self._down_until:
            return None
        key = f"{self.prefix}:rate:{bucket}:{caller}"
        try:
            allowed = self._script(keys=[key], args=[at, window_s, limit, uuid.uuid4().hex])
        except Exception as exc:
            logger.warning("rate limits are per process for now: Redis is out of reach (%s)", exc)
            self._down_until = time.monotonic() + RETRY_SECONDS
            return None
        return bool(allowed)


def shared_rate_limiter_from_env() -> RedisRateLimiter | None:
    url = os.environ.get(URL_ENV)
    if not url:
        return None
    return RedisRateLimiter(url, os.environ.get(PREFIX_ENV) or "backfiller")
