"""What the services work with: the database, the definitions, the settings and the clock."""

from __future__ import annotations

from dataclasses import dataclass, field

from backfiller.clock import Clock, utc_now
from backfiller.config import Settings
from backfiller.definitions.loading import Definitions
from backfiller.services.selections import PinCache
from backfiller.storage import Database


@dataclass
class Backend:
    """Long-lived, one per process (the server's request context extends it)."""

    database: Database
    definitions: Definitions
    settings: Settings
    clock: Clock = utc_now
    pins: PinCache = field(default_factory=PinCache)
    """Stored backfills pinned to their key spaces (``services.selections``)."""


__all__ = ["Backend"]
