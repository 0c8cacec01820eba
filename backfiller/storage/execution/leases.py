"""Daemon leases: acquired, renewed while valid, and taken over only once expired.

A lease row says that its owner may claim and run until ``expires_at``. Renewal is conditional
(the row must exist and not have expired), so a daemon cut off for longer than its lease never
resumes under it: it must start over under a new name. Taking over an owner's runs locks its
lease row, checks that it has expired (or is gone), ends the runs and deletes the row, all in
one transaction, so a renewal racing the takeover either wins first (no takeover) or finds the
row gone. Times come from the daemons' clocks, which are assumed to agree within the margin
between a lease's deadline and the moment its workers stop (see ``backfiller.daemon.lease``).
"""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import delete, select, update

from backfiller.domain import RunState
from backfiller.storage.execution.common import ACTIVE, SessionRepository, changed
from backfiller.storage.records import DaemonLeaseRecord, RunRecord
from backfiller.storage.upserts import upsert


class LeasesRepository(SessionRepository):
    async def acquire_lease(
        self, owner: str, now: datetime, expires_at: datetime, started_at: datetime
    ) -> None:
        """A new lease for a new owner name (an existing row of that name is left alone)."""
        ins = upsert(self.dialect, DaemonLeaseRecord)
        await self.session.execute(
            ins.values(
                owner=owner, heartbeat_at=now, started_at=started_at, expires_at=expires_at
            ).on_conflict_do_nothing(index_elements=[DaemonLeaseRecord.owner])
        )

    async def renew_lease(self, owner: str, now: datetime, expires_at: datetime) -> bool:
        """Extend a valid lease, and the heartbeat of the owner's running runs."""
        result = await self.session.execute(
            update(DaemonLeaseRecord)
            .where(DaemonLeaseRecord.owner == owner, DaemonLeaseRecord.expires_at > now)
            .values(heartbeat_at=now, expires_at=expires_at)
            .execution_options(synchronize_session=False)
        )
        if not changed(result):
            return False
        await self.session.execute(
            update(RunRecord)
            .where(RunRecord.lease_owner == owner, RunRecord.status == RunState.RUNNING)
            .values(heartbeat_at=now)
            .execution_options(synchronize_session=False)
        )
        return True

    async def leases(self) -> dict[str, datetime | None]:
        """Every lease and its deadline."""
        result = await self.session.execute(
            select(DaemonLeaseRecord.owner, DaemonLeaseRecord.expires_at)
        )
        return {str(o): at for o, at in result.all()}

    async def active_run_owners(self) -> list[str]:
        result = await self.session.execute(
            select(RunRecord.lease_owner)
            .where(RunRecord.status.in_(ACTIVE), RunRecord.lease_owner.is_not(None))
            .distinct()
        )
        return [str(o) for o in result.scalars()]

    async def runs_of_owner(self, owner: str) -> list[int]:
        return list(await self.active_runs_of_owner(owner))

    async def active_runs_of_owner(self, owner: str) -> dict[int, RunState]:
        """The active runs leased to ``owner`` and their status, in id order."""
        result = await self.session.execute(
            select(RunRecord.id, RunRecord.status)
            .where(RunRecord.lease_owner == owner, RunRecord.status.in_(ACTIVE))
            .order_by(RunRecord.id)
        )
        return {int(r): RunState(s) for r, s in result.all()}

    async def active_attempts_of_owner(self, owner: str, limit: int) -> dict[int, int]:
        """Up to ``limit`` active runs leased to ``owner`` (a ranged run by its lead only: its
        other rows follow it), each with its current attempt, in id order."""
        result = await self.session.execute(
            select(RunRecord.id, RunRecord.attempt)
            .where(
                RunRecord.lease_owner == owner,
                RunRecord.status.in_(ACTIVE),
                RunRecord.lead_run_id.is_(None),
            )
            .order_by(RunRecord.id)
            .limit(limit)
        )
        return {int(r): int(a) for r, a in result.all()}

    async def queued_of(self, run_ids: list[int]) -> set[int]:
        """Those of ``run_ids`` still QUEUED: no start of theirs was ever written."""
        if not run_ids:
            return set()
        result = await self.session.execute(
            select(RunRecord.id).where(
                RunRecord.id.in_(run_ids), RunRecord.status == RunState.QUEUED
            )
        )
        return {int(r) for r in result.scalars().all()}

    async def lock_expired_lease(self, owner: str, now: datetime) -> bool:
        """Lock ``owner``'s lease row; whether it has expired (or is gone): a takeover's check."""
        stmt = select(DaemonLeaseRecord.expires_at).where(DaemonLeaseRecord.owner == owner)
        if self.dialect == "postgresql":
            stmt = stmt.with_for_update()
        row = (await self.session.execute(stmt)).one_or_none()
        return row is None or row.expires_at is None or row.expires_at <= now

    async def drop_lease(self, owner: str) -> None:
        await self.session.execute(
            delete(DaemonLeaseRecord).where(DaemonLeaseRecord.owner == owner)
        )
