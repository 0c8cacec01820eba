"""What the ticks of one daemon share: its name, its lease, its limits and its caches."""

from __future__ import annotations

import os
import socket
import time
import uuid
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from backfiller.domain import BackfillState
from backfiller.services.selections import PinCache
from backfiller.storage import Database
from backfiller.storage.execution import ExecutionRepository
from backfiller.storage.records import BackfillRecord
from backfiller.storage.run_credentials import signing_key

PLAN_WINDOW = 1_000


def new_owner() -> str:
    """A daemon's lease owner: host, pid and a nonce (a restarted daemon is a new owner)."""
    return f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"


@dataclass
class Limits:
    """Run limits of one daemon.

    Args:
        max_runs: runs this daemon keeps active at once (queued and running), None for the
            launcher's capacity only.
    """

    max_runs: int | None = None


@dataclass
class DaemonState:
    """What ticks of one daemon share: who it is, its lease and its caches."""

    owner: str = field(default_factory=new_owner)
    started_at: datetime | None = None
    pins: PinCache = field(default_factory=PinCache)
    """Its backfills pinned to their key spaces (``services.selections``)."""
    limits: Limits = field(default_factory=Limits)
    plan_window: int = PLAN_WINDOW
    lease_timeout: timedelta = timedelta(seconds=30)
    """The lease's length: a daemon silent for this long is taken over."""
    lease_expires_at: datetime | None = None
    """The deadline of this daemon's lease, as last renewed (None: no lease yet)."""
    stop_by: datetime | None = None
    """When the launcher stops every run unless the lease is renewed first."""
    lost_leases: int = 0
    claim_batch: int = 16
    """Claim when this much room is free, or when more room is free than runs are in flight."""
    backfills_ttl: float = 0.25
    """How long the list of RUNNING backfills is reused between claims (seconds)."""
    _running: tuple[float, list[BackfillRecord]] | None = None
    warmed: bool = False
    """Whether :meth:`warm` ran: what the first claim would otherwise pay is paid."""

    async def warm(self, database: Database) -> None:
        """Pay up front, in an idle pass, what the daemon's first claim would pay: the run
        credentials' signing key (read once, or made, then cached), so that the first run of
        the first backfill is not later than the next ones'."""
        self.warmed = True
        await signing_key(database)

    async def running_backfills(self, database: Database) -> list[BackfillRecord]:
        cached = self._running
        if cached is not None and time.monotonic() - cached[0] < self.backfills_ttl:
            return cached[1]
        async with database.read() as session:
            records = await ExecutionRepository(session).backfills_in([BackfillState.RUNNING])
        self._running = (time.monotonic(), records)
        return records

    def forget_backfills(self) -> None:
        self._running = None
