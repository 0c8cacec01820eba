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
from backfiller.storage.teams import TeamRepository

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
        team_max_runs: the default limit of a team (see the attribute).
    """

    max_runs: int | None = None
    team_max_runs: int | None = None
    """Each team's runs in flight at once, across daemons, unless the team has a limit of its
    own (``setTeamLimit``); None: no limit."""


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
    claimed_since_read: dict[int, int] = field(default_factory=dict)
    """Runs this daemon claimed per backfill since the RUNNING backfills were read: their
    cached counters do not count them yet (the fair share adds them)."""
    team_limits_ttl: float = 1.0
    """How long the teams' own limits are reused between claims (seconds)."""
    _team_limits: tuple[float, dict[str, int | None]] | None = None
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
        self.claimed_since_read = {}
        return records

    def forget_backfills(self) -> None:
        self._running = None
        self.claimed_since_read = {}

    def claimed(self, backfill_id: int, n: int) -> None:
        """Count ``n`` runs claimed for a backfill since its counters were read."""
        self.claimed_since_read[backfill_id] = self.claimed_since_read.get(backfill_id, 0) + n

    async def team_limits(self, database: Database) -> dict[str, int | None]:
        """The teams' own limits (``team_limits``), read at most every ``team_limits_ttl``."""
        cached = self._team_limits
        if cached is not None and time.monotonic() - cached[0] < self.team_limits_ttl:
            return cached[1]
        async with database.read() as session:
            limits = await TeamRepository(session).limits()
        self._team_limits = (time.monotonic(), limits)
        return limits

    def team_limit(self, limits: dict[str, int | None], team: str | None) -> int | None:
        """The limit of ``team``: its own, else the daemon's default (no team: none)."""
        if team is None:
            return None
        return limits.get(team, self.limits.team_max_runs)
