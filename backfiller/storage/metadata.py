"""Every record module in one place: import ``metadata`` to get all the tables.

The record modules import ``base`` only, never each other; this module registers them all on
``Base.metadata`` for the migrations (``compare_metadata``, autogenerate) and the tests.
"""

from __future__ import annotations

from backfiller.storage import (
    auth_records,
    backfill_listing,
    mark_records,
    notification_records,
    records,
    teams,
    trigger_records,
    web_sessions,
)
from backfiller.storage.base import Base

metadata = Base.metadata

__all__ = [
    "auth_records",
    "backfill_listing",
    "mark_records",
    "metadata",
    "notification_records",
    "records",
    "teams",
    "trigger_records",
    "web_sessions",
]
