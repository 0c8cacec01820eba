"""The retention tick: every daemon prunes the history past its keeping, a little at a time.

How long each kind of history is kept, and where pruned rows are archived, is
:class:`~backfiller.config.HistorySettings` (the environment's, ``BACKFILLER_KEEP_*``). A tick
runs after the daemon's other tasks in the same pass of its loop, so it works for at most
``TICK_SECONDS`` (short transactions of ``batch_rows`` rows each, see
``services.pruning``) and looks for expired history at most every ``IDLE_SECONDS`` once it
found none. Several daemons may prune at once: a batch another daemon deleted first is simply
found gone.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from datetime import datetime

from backfiller.config import HistorySettings
from backfiller.daemon.report import TickReport
from backfiller.services.pruning import Cutoffs, Pruner
from backfiller.storage import Database
from backfiller.storage.history_partitions import make_ahead, partitioned

logger = logging.getLogger("backfiller.daemon")

EVERY_SECONDS = 1.0
"""How often the loop calls the tick."""
TICK_SECONDS = 0.05
"""The longest a tick works: the other tasks of the daemon wait for it."""
IDLE_SECONDS = 60.0
"""How long after a tick that found nothing to prune the next one looks again."""
RANGES_SECONDS = 30.0
"""How often a daemon sees whether the history needs its next range of partitions (a whole
range is made ahead, so that launches have a day's worth of ids before they reach it)."""


class Retention:
    """The retention tick of one daemon."""

    def __init__(
        self,
        database: Database,
        clock: Callable[[], datetime],
        settings: HistorySettings | None = None,
    ) -> None:
        self.clock = clock
        self.settings = settings or HistorySettings.from_env()
        self.pruner = Pruner(database, self.settings, database.log_store)
        self._idle_until = 0.0
        self._ranges_at = 0.0
        self.database = database

    async def _make_ranges(self) -> None:
        """Make the next range of the history's partitions when the newest is in use
        (PostgreSQL; ``storage.history_partitions``)."""
        if self.database.dialect != "postgresql":
            return
        now = self.clock()
        try:
            made = await self.database.transact(
                lambda conn: make_ahead(conn, now) if partitioned(conn) else None
            )
        except Exception:  # pruning goes on; the next look tries again
            logger.exception("history: making the next range of partitions failed")
            return
        if made is not None:
            logger.info("history: partitions made for backfills %d to %d", made.low, made.high - 1)

    async def tick(self) -> TickReport:
        if time.monotonic() >= self._ranges_at:
            self._ranges_at = time.monotonic() + RANGES_SECONDS
            await self._make_ranges()
        if time.monotonic() < self._idle_until:
            return TickReport()
        deleted = await self.pruner.prune(Cutoffs.of(self.settings, self.clock()), TICK_SECONDS)
        if not sum(deleted.values()):
            self._idle_until = time.monotonic() + IDLE_SECONDS
            return TickReport()
        logger.info(
            "retention: deleted %s",
            ", ".join(f"{n} {table}" for table, n in sorted(deleted.items()) if n),
        )
        return TickReport()
