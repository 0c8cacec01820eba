"""Teams: per-team limits on concurrent runs (admin-managed), and a team's runs in flight.

A team is a name: what a token (``api_tokens.team``), a signed-in person (``web_sessions``)
or a trigger belongs to; a backfill acts for its launcher's team (``backfills.team``). Only the
limits are stored apart, one row per team that has one.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from sqlalchemy import Integer, String, delete, func, select
from sqlalchemy.ext.asyncio import AsyncSession
from sqlalchemy.orm import Mapped, mapped_column

from backfiller.domain import BackfillState
from backfiller.storage.base import Base
from backfiller.storage.records import BackfillRecord

MAX_TEAM_NAME = 200

HOLDING_RUNS = (BackfillState.RUNNING, BackfillState.PAUSED, BackfillState.CANCELING)
"""The statuses of a backfill that may have runs in flight."""


class TeamLimitRecord(Base):
    """A team's cap on runs in flight across all its backfills (None: no cap of its own)."""

    __tablename__ = "team_limits"

    team: Mapped[str] = mapped_column(String(200), primary_key=True)
    max_concurrent_runs: Mapped[int | None] = mapped_column(Integer)
    updated_at: Mapped[datetime]
    updated_by: Mapped[str | None] = mapped_column(String(200))


class TeamRepository:
    def __init__(self, session: AsyncSession) -> None:
        self.session = session

    async def limits(self) -> dict[str, int | None]:
        """Every team's own limit, by name."""
        found = await self.session.execute(
            select(TeamLimitRecord.team, TeamLimitRecord.max_concurrent_runs)
        )
        return {str(team): limit for team, limit in found.all()}

    async def limit_records(self) -> Sequence[TeamLimitRecord]:
        found = await self.session.execute(select(TeamLimitRecord).order_by(TeamLimitRecord.team))
        return list(found.scalars())

    async def set_limit(
        self, team: str, limit: int | None, now: datetime, by: str | None
    ) -> TeamLimitRecord | None:
        """Set (``limit`` None: remove) a team's limit; returns the row, None once removed."""
        await self.session.execute(delete(TeamLimitRecord).where(TeamLimitRecord.team == team))
        if limit is None:
            return None
        record = TeamLimitRecord(
            team=team, max_concurrent_runs=limit, updated_at=now, updated_by=by
        )
        self.session.add(record)
        await self.session.flush()
        return record

    async def active_runs(self, teams: Sequence[str]) -> dict[str, int]:
        """Each of ``teams``' runs in flight (queued and running), across its backfills."""
        if not teams:
            return {}
        table = BackfillRecord.__table__
        found = await self.session.execute(
            select(table.c.team, func.sum(table.c.queued + table.c.running))
            .where(table.c.team.in_(list(teams)), table.c.status.in_(HOLDING_RUNS))
            .group_by(table.c.team)
        )
        return {str(team): int(n or 0) for team, n in found.all()}


__all__ = ["HOLDING_RUNS", "MAX_TEAM_NAME", "TeamLimitRecord", "TeamRepository"]
