"""HMAC-SHA256 signatures of webhook deliveries.

The receiver recomputes ``hex(HMAC-SHA256(secret, f"{timestamp}." + body))`` over the raw body
and the ``X-Backfiller-Timestamp`` header, compares it with ``X-Backfiller-Signature``
(``sha256=<hex>``) in constant time, and refuses old timestamps (replays).
"""

from __future__ import annotations

import hashlib
import hmac

SIGNATURE_HEADER = "X-Backfiller-Signature"
TIMESTAMP_HEADER = "X-Backfiller-Timestamp"
DELIVERY_HEADER = "X-Backfiller-Delivery"
EVENT_HEADER = "X-Backfiller-Event"


def signature(secret: bytes, timestamp: int, body: bytes) -> str:
    digest = hmac.new(secret, f"{timestamp}.".encode() + body, hashlib.sha256).hexdigest()
    return f"sha256={digest}"


def verify(secret: bytes, timestamp: str, body: bytes, given: str) -> bool:
    """What a receiver does (also used by the tests)."""
    if not timestamp.isdigit():
        return False
    return hmac.compare_digest(signature(secret, int(timestamp), body), given)


def headers(
    secret: bytes | None, timestamp: int, body: bytes, key: str, event: str
) -> dict[str, str]:
    found = {
        "Content-Type": "application/json",
        "User-Agent": "backfiller-webhooks",
        TIMESTAMP_HEADER: str(timestamp),
        DELIVERY_HEADER: key,
        "Idempotency-Key": key,
        EVENT_HEADER: event,
    }
    if secret:
        found[SIGNATURE_HEADER] = signature(secret, timestamp, body)
    return found
