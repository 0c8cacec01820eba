"""Readiness checks shared by the server's and the daemon's ``/readyz``.

``/healthz`` says the process is alive; ``/readyz`` that it can do its work: the database
answers, its schema is at this release's migration head, and the definitions are loaded. The
daemon adds that its loop passed recently.
"""

from __future__ import annotations

import asyncio
import functools
from dataclasses import dataclass
from typing import Any

from backfiller.storage.stats import stamped_revision

DATABASE_TIMEOUT_SECONDS = 2.0


@dataclass(frozen=True, slots=True)
class Check:
    name: str
    ok: bool
    detail: str = ""


@functools.cache
def _head() -> str | None:
    from backfiller.storage.migrations import head_revision

    return head_revision()


async def database_checks(database: Any) -> list[Check]:
    """The database answers, and it is at this release's migration head."""
    try:
        async with asyncio.timeout(DATABASE_TIMEOUT_SECONDS), database.read() as session:
            found = await stamped_revision(session)
    except Exception as exc:
        return [Check("database", False, f"{type(exc).__name__}"), Check("migrations", False)]
    head = _head()
    current = Check("migrations", found == head, f"at {found}, head {head}")
    return [Check("database", True), current]


def definitions_check(definitions: Any) -> Check:
    jobs = len(getattr(definitions, "jobs", ()) or ())
    return Check("definitions", definitions is not None, f"{jobs} jobs")


def as_json(checks: list[Check]) -> tuple[int, dict[str, Any]]:
    """The HTTP status (200 or 503) and body of a readiness answer."""
    ready = all(c.ok for c in checks)
    body = {
        "status": "ready" if ready else "not ready",
        "checks": {c.name: {"ok": c.ok, "detail": c.detail} for c in checks},
    }
    return (200 if ready else 503), body
