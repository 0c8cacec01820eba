"""One delivery attempt, bounded in time and memory, and what the API may say about it.

An attempt has one deadline for all of it: resolving the host, connecting, sending, waiting
for the answer and reading it (a receiver that trickles its answer a byte at a time is cut off
at the deadline, not kept alive by each byte). Of the answer, the status and at most
:data:`MAX_ANSWER_BYTES` of the body are read, as they arrive; the rest is never read (the
connection is closed), so an answer of any size costs the daemon a few KiB.

What is recorded and shown through the API is a coarse category (``refused``, ``timed out``,
``connection failed``, ``HTTP <status>``): no network detail that would make the daemon a
scanner of the networks it can reach. The detail is for the daemon's log.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import httpx

MAX_ANSWER_BYTES = 4096
MAX_RESPONSE_CHARS = 500

REFUSED = "refused"
TIMED_OUT = "timed out"
CONNECTION_FAILED = "connection failed"
FAILED = "failed"


@dataclass(frozen=True, slots=True)
class Outcome:
    """What one attempt gave: ``error`` is a category (None: delivered), ``detail`` is for
    the log only."""

    status: int | None
    error: str | None
    text: str | None
    detail: str | None = None

    @property
    def delivered(self) -> bool:
        return self.error is None

    @property
    def category(self) -> str:
        """The outcome as a metric's label."""
        if self.error is None:
            return "delivered"
        if self.status is not None:
            return "http_error"
        return self.error.replace(" ", "_")


async def _first_bytes(response: httpx.Response, limit: int) -> bytes:
    """At most ``limit`` bytes of the body, as sent (no decoding: a compressed answer cannot
    grow here); the rest stays unread."""
    found = bytearray()
    async for chunk in response.aiter_raw():
        found += chunk[: limit - len(found)]
        if len(found) >= limit:
            break
    return bytes(found)


async def post_once(
    client: httpx.AsyncClient,
    url: str,
    body: bytes,
    headers: dict[str, str],
    deadline_seconds: float,
) -> Outcome:
    """POST ``body`` to ``url`` once, within ``deadline_seconds`` in all."""
    import httpx  # with the egress module: loaded by the first delivery, not by a daemon's start

    from backfiller.notify.egress import EgressRefused

    try:
        async with asyncio.timeout(deadline_seconds):
            request = client.build_request(
                "POST", url, content=body, headers={**headers, "Accept-Encoding": "identity"}
            )
            response = await client.send(request, stream=True)
            try:
                head = await _first_bytes(response, MAX_ANSWER_BYTES)
            finally:
                await response.aclose()
    except (TimeoutError, httpx.TimeoutException):
        return Outcome(None, TIMED_OUT, None, f"no whole answer within {deadline_seconds:g} s")
    except EgressRefused as exc:
        return Outcome(None, REFUSED, None, str(exc))
    except (httpx.HTTPError, httpx.InvalidURL, OSError) as exc:
        return Outcome(None, CONNECTION_FAILED, None, f"{type(exc).__name__}: {exc}")
    status = response.status_code
    text = head.decode("utf-8", "replace")[:MAX_RESPONSE_CHARS]
    error = None if 200 <= status < 300 else f"HTTP {status}"
    return Outcome(status, error, text)
