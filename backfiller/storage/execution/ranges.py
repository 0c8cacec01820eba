"""Ranged claims: chunks of consecutive pending slots become one run each (a backfill policy).

A ranged run is one run row per partition, inserted in one transaction: the row of the range's
first partition leads (``partition_count``), the others name it (``lead_run_id``). So every
guarantee of a single run holds for each partition of a range, with the same code: each row
holds its partition's place in ``active_runs`` (a range never overlaps an active
run of one of its partitions, in any backfill), ``reprocess`` is decided per partition at claim
time, before the chunks are formed (a partition made moot is skipped and splits its chunk; a
busy one waits and splits it too), and results write every row of the range, fenced by the
lead's ``(run_id, attempt)`` (``results``). The start gate checks the lead, which changes only
with its members.

Limits count runs, not partitions: a backfill's ``maxConcurrentRuns`` and a job's
``max_concurrent_runs`` count the active leads.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from sqlalchemy import func, select

from backfiller.domain import BackfillState, Reprocess, RunState
from backfiller.domain.ranges import chunk_consecutive
from backfiller.storage.execution.claims import ClaimedRun, ClaimsRepository
from backfiller.storage.execution.common import ACTIVE, active_t
from backfiller.storage.records import BackfillRecord, RunRecord

Namer = Callable[[str], tuple[str, str]]
"""A slot key -> the (job or asset, partition key) of its runs."""

KeyIndex = Callable[[str], int | None]
"""A partition key's index in its key space (None: not in it); consecutive keys differ by 1."""


@dataclass(frozen=True, slots=True)
class ClaimedRange:
    """One ranged run: its partitions in key order; the first is the lead (the run's id)."""

    runs: tuple[ClaimedRun, ...]

    @property
    def lead(self) -> ClaimedRun:
        return self.runs[0]

    @property
    def partition_keys(self) -> tuple[str, ...]:
        return tuple(r.partition_key for r in self.runs)


@dataclass(frozen=True, slots=True)
class RangedAsset:
    """How an asset with a backfill policy is claimed in an asset backfill."""

    per_run: int
    key_index: KeyIndex
    """A partition key of the asset -> its index in the asset's key space."""
    neighbours: Callable[[str], tuple[str, ...]]
    """A partition key -> the keys just before and after it in the asset's key space."""


@dataclass
class RangeClaim:
    """What a ranged claim did: the runs it queued, and the slots it skipped."""

    ranges: list[ClaimedRange] = field(default_factory=list)
    skipped: int = 0


@dataclass(frozen=True, slots=True)
class RangeLimits:
    per_run: int
    backfill_limit: int | None = None
    job_limit: int | None = None


class RangeClaimsRepository(ClaimsRepository):
    async def claim_ranges(
        self,
        pk: int,
        job_name: str,
        want: int,
        now: datetime,
        owner: str,
        key_index: KeyIndex,
        limits: RangeLimits,
        *,
        reprocess: Reprocess = Reprocess.ALL,
    ) -> RangeClaim:
        """Claim up to ``want`` ranged runs of a RUNNING backfill, in launch order.

        Like :meth:`ClaimsRepository.claim_slots`, with the claimable slots grouped into
        chunks of at most ``limits.per_run`` consecutive partitions (``key_index``).
        """
        claim = RangeClaim()
        if want <= 0:
            return claim
        await self.check_lease(owner, now)
        room = await self._range_room(pk, job_name, want, limits)
        allowed, active_rows = room.allowed, room.active_rows
        if allowed <= 0:
            return claim
        limit = allowed * limits.per_run + active_rows
        candidates = await self._due_pending(pk, now, limit)
        if not candidates:
            return claim
        keys = [c.partition_key for c in candidates]
        busy = await self._busy(job_name, keys) if active_rows else set()
        free = [c for c in candidates if c.partition_key not in busy]
        if reprocess is not Reprocess.ALL and free:
            free, claim.skipped = await self._skip_moot(pk, job_name, reprocess, free, now)
        indexes = [key_index(str(c.partition_key)) for c in free]
        groups = chunk_consecutive(indexes, limits.per_run)
        if groups and _cut_short(groups[-1], free, candidates, limits.per_run, room, limit):
            groups.pop()  # its chunk goes on past what this claim sees: the next claim takes it
        groups = groups[:allowed]
        chunks = [_in_key_order([free[i] for i in g], [indexes[i] for i in g]) for g in groups]
        if chunks:
            claim.ranges = await self._queue_ranges(pk, job_name, chunks, owner, now)
        return claim

    async def _range_room(self, pk: int, job_name: str, want: int, limits: RangeLimits) -> _Room:
        """How many runs the limits allow now, how many rows of the job are active, and
        whether the backfill has slots still to plan."""
        locked = await self._ranged_backfill_room(pk, want, limits.backfill_limit)
        if locked is None:
            return _Room(0, 0, None)
        allowed, row = locked
        if limits.job_limit is not None:
            await self._serialize_job(job_name)
            runs_of_job = await self._active_leads(RunRecord.job_name == job_name)
            allowed = min(allowed, limits.job_limit - runs_of_job)
        active_rows = await self.session.execute(
            select(func.count()).where(active_t.c.job_name == job_name)
        )
        planned = int(row.planned) if int(row.planned) < int(row.total) else None
        return _Room(allowed, int(active_rows.scalar_one()), planned)

    async def _ranged_backfill_room(
        self, pk: int, want: int, backfill_limit: int | None
    ) -> tuple[int, Any] | None:
        """Lock the backfill's row while it is RUNNING (None: it is not); how many of ``want``
        runs its limit allows now (a ranged run counts once), and its planning cursor and
        total. Every ranged claim starts here (job and asset claims)."""
        locked = await self.session.execute(
            select(BackfillRecord.planned, BackfillRecord.total, BackfillRecord.max_concurrent_runs)
            .where(BackfillRecord.id == pk, BackfillRecord.status == BackfillState.RUNNING)
            .with_for_update()
        )
        row = locked.one_or_none()
        if row is None:
            return None
        allowed = want
        backfill_limit = row.max_concurrent_runs  # the row's own: updateBackfill may change it
        if backfill_limit is not None:
            runs_of_backfill = await self._active_leads(RunRecord.backfill_id == pk)
            allowed = min(allowed, backfill_limit - runs_of_backfill)
        return allowed, row

    async def _active_leads(self, where: Any) -> int:
        """Active runs (a ranged run counts once) matching ``where``."""
        counted = await self.session.execute(
            select(func.count()).where(
                where, RunRecord.status.in_(ACTIVE), RunRecord.lead_run_id.is_(None)
            )
        )
        return int(counted.scalar_one())

    async def _queue_ranges(
        self, pk: int, job_name: str | Namer, chunks: list[list[Any]], owner: str, now: datetime
    ) -> list[ClaimedRange]:
        """PENDING -> QUEUED for every slot of ``chunks``; one lead run per chunk, then the
        other rows of each range naming their lead. ``job_name``: the job, or what splits an
        asset backfill's slot key into the asset and its partition key."""
        namer = job_name if callable(job_name) else _of_job(job_name)
        chosen = [c for chunk in chunks for c in chunk]
        await self._mark_queued(pk, chosen, now)
        lead_ids = await self._insert_runs(
            pk, namer, [(chunk[0], None, len(chunk)) for chunk in chunks], owner, now
        )
        members = [
            (c, lead, 1) for lead, chunk in zip(lead_ids, chunks, strict=True) for c in chunk[1:]
        ]
        member_ids = iter(await self._insert_runs(pk, namer, members, owner, now))
        ranges: list[ClaimedRange] = []
        for lead_id, chunk in zip(lead_ids, chunks, strict=True):
            ids = [lead_id] + [next(member_ids) for _ in chunk[1:]]
            ranges.append(
                ClaimedRange(tuple(_claimed(i, c) for i, c in zip(ids, chunk, strict=True)))
            )
        await self.record_partition_states(
            [(*namer(r.partition_key), RunState.QUEUED, r.run_id) for g in ranges for r in g.runs],
            now,
        )
        await self._count(pk, len(chosen), now, to="queued")
        return ranges

    async def _insert_runs(
        self,
        pk: int,
        namer: Namer,
        rows: Sequence[tuple[Any, int | None, int]],
        owner: str,
        now: datetime,
    ) -> list[int]:
        """Insert QUEUED runs for ``(slot, lead_run_id, partition_count)``; their ids in order."""
        if not rows:
            return []
        return await self.insert_runs(
            [
                {
                    "backfill_id": pk,
                    "slot_id": c.id,
                    "job_name": namer(str(c.partition_key))[0],
                    "partition_key": namer(str(c.partition_key))[1],
                    "attempt": int(c.attempts) + 1,
                    "status": RunState.QUEUED,
                    "queued_at": now,
                    "lease_owner": owner,
                    "lead_run_id": lead,
                    "partition_count": count,
                }
                for c, lead, count in rows
            ]
        )


@dataclass(frozen=True, slots=True)
class _Room:
    allowed: int
    active_rows: int
    planned_until: int | None
    """The backfill's planning cursor while it has positions still to plan, else None."""


def _cut_short(
    group: list[int],
    free: list[Any],
    candidates: Sequence[Any],
    per_run: int,
    room: _Room,
    limit: int,
) -> bool:
    """Whether the last chunk is short only because the claim saw no further: it ends at the
    last candidate, and the query's limit or the planning cursor stopped there. A chunk split
    by a skipped or busy partition, or at the selection's end, is short for good."""
    last = free[group[-1]]
    if len(group) >= per_run or last.id != candidates[-1].id:
        return False
    at_plan_edge = room.planned_until is not None and int(last.position) == room.planned_until - 1
    return len(candidates) == limit or at_plan_edge


def _of_job(job_name: str) -> Namer:
    def name(slot_key: str) -> tuple[str, str]:
        return job_name, slot_key

    return name


def _in_key_order(chunk: list[Any], indexes: list[int | None]) -> list[Any]:
    """A chunk's slots by key index (oldest first), whatever the launch order."""
    if len(chunk) < 2:
        return chunk
    return [c for _, c in sorted(zip(indexes, chunk, strict=True), key=lambda p: p[0] or 0)]


def _claimed(run_id: int, c: Any) -> ClaimedRun:
    return ClaimedRun(run_id, int(c.id), int(c.position), str(c.partition_key), int(c.attempts) + 1)
