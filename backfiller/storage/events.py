"""A backfill's events: the statement that appends them and the parameters of one."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import insert

from backfiller.domain import EventKind
from backfiller.storage.prepared import Prepared
from backfiller.storage.records import BackfillEventRecord, table_of

# Statements built once: building an ORM insert per call costs more than running it.
INSERT_EVENT = insert(table_of(BackfillEventRecord))
EVENTS = Prepared(INSERT_EVENT)
"""``INSERT_EVENT`` prepared (``storage/prepared.py``): for a launch's and a tick's events."""


def event_row(
    backfill_id: int, kind: EventKind, at: datetime, actor: str | None, message: str | None
) -> dict[str, Any]:
    """The parameters of ``INSERT_EVENT`` for one event."""
    return {
        "backfill_id": backfill_id,
        "kind": kind.value,
        "at": at,
        "actor": actor,
        "message": message,
    }


__all__ = ["EVENTS", "INSERT_EVENT", "event_row"]
