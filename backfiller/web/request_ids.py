"""Request ids: the one place that makes them."""

from __future__ import annotations

import os


def new_request_id() -> str:
    """A new request id: 32 hex digits, a random (version 4) UUID as ``uuid.uuid4().hex``
    writes it, made from 16 random bytes without building a ``UUID`` object (which took a
    noticeable share of a small request's CPU)."""
    raw = bytearray(os.urandom(16))
    raw[6] = (raw[6] & 0x0F) | 0x40  # version 4
    raw[8] = (raw[8] & 0x3F) | 0x80  # RFC 4122 variant
    return raw.hex()
