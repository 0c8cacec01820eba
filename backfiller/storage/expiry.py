"""When a backfill's history has expired: it finished (a terminal status) and ended before a
cutoff. Retention's one rule, for the rows it deletes (``storage.retention``) and the ranges
of partitions it drops (``storage.history_partitions``)."""

from __future__ import annotations

from typing import Any

from sqlalchemy import ColumnElement, and_

from backfiller.domain import TERMINAL_BACKFILL_STATES
from backfiller.storage.records import BackfillRecord, table_of

backfills_t = table_of(BackfillRecord)

FINISHED = sorted(TERMINAL_BACKFILL_STATES)


def expired(cutoff: Any) -> ColumnElement[bool]:
    """Backfills that finished and ended before ``cutoff`` (a time, or a bound parameter)."""
    return and_(backfills_t.c.status.in_(FINISHED), backfills_t.c.ended_at < cutoff)
