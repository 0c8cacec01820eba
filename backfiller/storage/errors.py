"""The exceptions storage raises, so that no layer above it catches a SQLAlchemy error.

Some live beside the repository that raises them (``storage.auth.TokenNameTaken``,
``storage.execution.ClaimConflict``); this module holds those of the launch path.
"""

from __future__ import annotations


class IdempotencyConflict(Exception):
    """Another transaction inserted a backfill with the same idempotency key first.

    Launching again finds that backfill by its key.
    """

    def __init__(self, key: str) -> None:
        super().__init__(f"a concurrent launch took the idempotency key {key!r}")
        self.key = key


__all__ = ["IdempotencyConflict"]
