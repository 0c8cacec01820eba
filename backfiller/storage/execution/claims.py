"""Claims: pending slots become QUEUED runs leased to a daemon, within every limit.

At most one execution of a (job, partition) at any instant is the database's to enforce: the
unique index ``uq_runs_active_partition`` admits one QUEUED or RUNNING run per (job, partition)
across all backfills, so a second claim of a busy partition fails (and is retried later as a
:class:`~backfiller.storage.errors.Conflict`). A claim passes over the partitions busy elsewhere
(they wait), and decides ``reprocess`` at that moment, after the busy check, from the latest run
of the partition: under ``MISSING`` a partition that another backfill ran meanwhile is skipped
if that run succeeded; under ``ALL`` it runs once the other run is over.

A daemon claims only under a valid lease, checked in the claim's own transaction.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from sqlalchemy import bindparam, func, or_, select, text, update

from backfiller.domain import (
    BackfillState,
    Reprocess,
    RunState,
    SkipReason,
    SlotState,
    skip_reason_at_claim,
)
from backfiller.storage.errors import Conflict, LeaseLost
from backfiller.storage.execution.common import (
    ACTIVE,
    CHUNK,
    SessionRepository,
    changed,
    slots_t,
)
from backfiller.storage.execution.planning import PlanningRepository
from backfiller.storage.prepared import Prepared
from backfiller.storage.records import BackfillRecord, DaemonLeaseRecord, RunRecord, SlotRecord


class ClaimConflict(Conflict):
    """A claim lost a race; its transaction must roll back (the next tick tries again)."""


@dataclass(frozen=True, slots=True)
class ClaimedRun:
    run_id: int
    slot_id: int
    position: int
    partition_key: str
    attempt: int


@dataclass
class Claim:
    """What a claim did: the runs it queued, and the slots it skipped (``reprocess``)."""

    runs: list[ClaimedRun] = field(default_factory=list)
    skipped: int = 0
    ranges: list[Any] = field(default_factory=list)
    """An asset claim's ranged runs (``ranges.ClaimedRange``), for assets with a policy."""


class ClaimsRepository(SessionRepository):
    async def check_lease(self, owner: str, now: datetime) -> None:
        """Raise :class:`LeaseLost` unless ``owner`` holds an unexpired lease (shared lock)."""
        stmt = select(DaemonLeaseRecord.owner).where(
            DaemonLeaseRecord.owner == owner, DaemonLeaseRecord.expires_at > now
        )
        if self.dialect == "postgresql":
            stmt = stmt.with_for_update(read=True)
        if (await self.session.execute(stmt)).scalar_one_or_none() is None:
            raise LeaseLost(f"the lease of {owner} is gone or expired")

    async def _serialize_job(self, job_name: str) -> None:
        """Serialize claims of one job across daemons (PostgreSQL), for its run limit."""
        if self.dialect == "postgresql":
            await self.session.execute(
                text("SELECT pg_advisory_xact_lock(hashtext(:name))"), {"name": job_name}
            )

    async def _room(
        self, pk: int, job_name: str, want: int, backfill_limit: int | None, job_limit: int | None
    ) -> tuple[int, int]:
        """How many runs the limits allow now, and how many runs of the job are active."""
        locked = await self.session.execute(
            select(BackfillRecord.queued, BackfillRecord.running)
            .where(BackfillRecord.id == pk, BackfillRecord.status == BackfillState.RUNNING)
            .with_for_update()
        )
        row = locked.one_or_none()
        if row is None:
            return 0, 0
        allowed = want
        if backfill_limit is not None:
            allowed = min(allowed, backfill_limit - int(row.queued) - int(row.running))
        if job_limit is not None:
            await self._serialize_job(job_name)
        active_of_job = int(
            (
                await self.session.execute(
                    select(func.count()).where(
                        RunRecord.job_name == job_name, RunRecord.status.in_(ACTIVE)
                    )
                )
            ).scalar_one()
        )
        if job_limit is not None:
            allowed = min(allowed, job_limit - active_of_job)
        return allowed, active_of_job

    async def _busy(self, job_name: str, keys: Sequence[str]) -> set[str]:
        """The keys with an active run of ``job_name`` (in any backfill)."""
        busy: set[str] = set()
        for i in range(0, len(keys), CHUNK):
            result = await self.session.execute(
                select(RunRecord.partition_key).where(
                    RunRecord.job_name == job_name,
                    RunRecord.partition_key.in_(list(keys[i : i + CHUNK])),
                    RunRecord.status.in_(ACTIVE),
                )
            )
            busy.update(result.scalars())
        return busy

    async def claim_slots(
        self,
        pk: int,
        job_name: str,
        want: int,
        now: datetime,
        owner: str,
        *,
        reprocess: Reprocess = Reprocess.ALL,
        backfill_limit: int | None = None,
        job_limit: int | None = None,
    ) -> Claim:
        """Claim up to ``want`` pending slots of a RUNNING backfill, in launch order.

        Each claimed slot becomes QUEUED with a new QUEUED run leased to ``owner``. Slots whose
        partition has an active run elsewhere are passed over (they wait for it); slots whose
        partition another run made moot are skipped (``reprocess``, see the module's
        docstring). Slots are taken with ``FOR UPDATE SKIP LOCKED`` on PostgreSQL.
        """
        claim = Claim()
        if want <= 0:
            return claim
        await self.check_lease(owner, now)
        allowed, active_of_job = await self._room(pk, job_name, want, backfill_limit, job_limit)
        if allowed <= 0:
            return claim
        candidates = await self._due_pending(pk, now, allowed + active_of_job)
        if not candidates:
            return claim
        keys = [c.partition_key for c in candidates]
        # The busy check comes first: a run that ended since then has its state recorded.
        busy = await self._busy(job_name, keys) if active_of_job else set()
        free = [c for c in candidates if c.partition_key not in busy]
        if reprocess is not Reprocess.ALL and free:
            free, claim.skipped = await self._skip_moot(pk, job_name, reprocess, free, now)
        chosen = free[:allowed]
        if chosen:
            claim.runs = await self._queue(pk, job_name, chosen, owner, now)
        return claim

    async def _skip_moot(
        self, pk: int, job_name: str, reprocess: Reprocess, slots: list[Any], now: datetime
    ) -> tuple[list[Any], int]:
        """Skip the slots that the latest run of their partition made moot; keep the rest."""
        latest = await PlanningRepository(self.session).latest_states(
            job_name, [s.partition_key for s in slots]
        )
        keep: list[Any] = []
        skip: list[tuple[Any, SkipReason]] = []
        for s in slots:
            reason = skip_reason_at_claim(reprocess, latest.get(s.partition_key), int(s.attempts))
            if reason is None:
                keep.append(s)
            else:
                skip.append((s, reason))
        if not skip:
            return keep, 0
        moved = await self.session.execute(
            update(slots_t)
            .where(slots_t.c.id == bindparam("b_id"), slots_t.c.status == SlotState.PENDING)
            .values(status=SlotState.SKIPPED, skip_reason=bindparam("b_reason"), updated_at=now),
            [{"b_id": s.id, "b_reason": reason.value} for s, reason in skip],
        )
        if changed(moved) != len(skip):
            raise ClaimConflict(f"backfill {pk}: slots changed while skipping")
        await self._count(pk, len(skip), now, to="skipped")
        return keep, len(skip)

    async def _count(self, pk: int, n: int, now: datetime, *, to: str) -> None:
        """Move ``n`` from the backfill's ``pending`` counter to ``to``."""
        column = getattr(BackfillRecord, to)
        counted = await self.session.execute(
            update(BackfillRecord)
            .where(
                BackfillRecord.id == pk,
                BackfillRecord.status == BackfillState.RUNNING,
                BackfillRecord.pending >= n,
            )
            .values(
                {
                    BackfillRecord.pending: BackfillRecord.pending - n,
                    column: column + n,
                    BackfillRecord.updated_at: now,
                    BackfillRecord.version: BackfillRecord.version + 1,
                }
            )
            .execution_options(synchronize_session=False)
        )
        if not changed(counted):
            raise ClaimConflict(f"backfill {pk} changed while claiming")

    async def _due_pending(self, pk: int, now: datetime, limit: int) -> Sequence[Any]:
        """The first ``limit`` PENDING slots of backfill ``pk`` due now, in position order
        (on PostgreSQL locked, skipping those another claim holds)."""
        stmt = (
            select(
                SlotRecord.id, SlotRecord.position, SlotRecord.partition_key, SlotRecord.attempts
            )
            .where(
                SlotRecord.backfill_id == pk,
                SlotRecord.status == SlotState.PENDING,
                or_(SlotRecord.next_attempt_at.is_(None), SlotRecord.next_attempt_at <= now),
            )
            .order_by(SlotRecord.position)
            .limit(limit)
        )
        if self.dialect == "postgresql":
            stmt = stmt.with_for_update(skip_locked=True)
        return (await self.session.execute(stmt)).all()

    async def _mark_queued(self, pk: int, chosen: Sequence[Any], now: datetime) -> None:
        """PENDING -> QUEUED for every slot of ``chosen`` (one attempt more each), or
        ``ClaimConflict`` when any of them is no longer PENDING."""
        moved = await self.run_many(_MARK_QUEUED, [{"b_id": c.id, "b_now": now} for c in chosen])
        if moved != len(chosen):
            raise ClaimConflict(f"backfill {pk}: slots changed while claiming")

    async def _queue(
        self, pk: int, job_name: str, chosen: list[Any], owner: str, now: datetime
    ) -> list[ClaimedRun]:
        """PENDING -> QUEUED for ``chosen``, each with a new QUEUED run leased to ``owner``."""
        await self._mark_queued(pk, chosen, now)
        run_ids = await self.insert_runs(
            [
                {
                    "backfill_id": pk,
                    "slot_id": c.id,
                    "job_name": job_name,
                    "partition_key": c.partition_key,
                    "attempt": int(c.attempts) + 1,
                    "status": RunState.QUEUED,
                    "queued_at": now,
                    "lease_owner": owner,
                }
                for c in chosen
            ]
        )
        claimed = [
            ClaimedRun(rid, int(c.id), int(c.position), str(c.partition_key), int(c.attempts) + 1)
            for rid, c in zip(run_ids, chosen, strict=True)
        ]
        await self.record_partition_states(
            [(job_name, c.partition_key, RunState.QUEUED, c.run_id) for c in claimed], now
        )
        await self._count(pk, len(claimed), now, to="queued")
        return claimed


_MARK_QUEUED = Prepared(
    update(slots_t)
    .where(slots_t.c.id == bindparam("b_id"), slots_t.c.status == SlotState.PENDING)
    .values(
        status=SlotState.QUEUED,
        attempts=slots_t.c.attempts + 1,
        next_attempt_at=None,
        updated_at=bindparam("b_now"),
    )
)
"""Built once (``storage/prepared.py``): every claim runs it for each slot it queues."""
