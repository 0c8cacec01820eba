"""Storage's own exceptions, so that callers never see SQLAlchemy's or parse SQLSTATEs.

:func:`conflicts_translated` wraps a transaction (commit included) and turns what a lost race
looks like on each database (a unique violation, a serialization failure, a deadlock, a lock
not available) into :class:`Conflict`; the caller rolls back and tries again later.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from sqlalchemy.exc import DBAPIError, IntegrityError

# serialization failure, deadlock detected, lock not available
TRANSIENT_SQLSTATES = frozenset({"40001", "40P01", "55P03"})


class StorageError(Exception):
    """Base of storage's exceptions."""


class Conflict(StorageError):
    """A write lost a race with another writer; its transaction rolled back. Try again later."""


class LeaseLost(StorageError):
    """The daemon's lease is gone (expired, or taken over): it must start over."""


def is_transient(exc: BaseException) -> bool:
    """Whether a database error is a lost race that a retry can win."""
    if isinstance(exc, IntegrityError):
        return True
    if isinstance(exc, DBAPIError):
        code = getattr(getattr(exc, "orig", None), "sqlstate", None)
        return code in TRANSIENT_SQLSTATES
    return False


@asynccontextmanager
async def conflicts_translated() -> AsyncIterator[None]:
    """Re-raise a lost race inside the block as :class:`Conflict` (other errors unchanged)."""
    try:
        yield
    except DBAPIError as exc:
        if is_transient(exc):
            raise Conflict(str(exc.orig or exc)) from exc
        raise
