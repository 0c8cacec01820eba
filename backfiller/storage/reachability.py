"""Whether a database that did not answer may answer later (the daemon waits for it).

A server that is starting, restarting or out of reach refuses or drops the connection: waiting
may help. A server that answers and refuses (no such database or role, a refused login) will
refuse again: waiting would only hide the mistake.
"""

from __future__ import annotations

from sqlalchemy.exc import InterfaceError, OperationalError

PERMANENT_REFUSALS = (
    "does not exist",  # the database, or the role
    "authentication failed",
    "pg_hba.conf",
    "permission denied",
)
"""What a server that answers says when waiting would not help (the driver gives no SQLSTATE
for errors while connecting)."""


def unreachable_reason(exc: BaseException) -> str | None:
    """Why the database did not answer, in one line, when that may pass; None when it will
    not (a refusal above, or any error but a failed connection)."""
    if isinstance(exc, OSError):
        return f"{type(exc).__name__}: {exc}"
    if not isinstance(exc, OperationalError | InterfaceError):
        return None
    lines = str(exc.orig).strip().splitlines() or [""]
    if any(words in lines[0] for words in PERMANENT_REFUSALS):
        return None
    return f"{type(exc.orig).__name__}: {lines[0]}"
