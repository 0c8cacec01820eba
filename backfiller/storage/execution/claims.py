"""Claims: pending slots become QUEUED runs leased to a daemon, within every limit.

At most one execution of a (job, partition) at any instant is the database's to enforce: the
primary key of ``active_runs`` (kept by triggers on ``runs``, see ``ActiveRunRecord``) admits
one QUEUED or RUNNING run per (job, partition) across all backfills, so a second claim of a
busy partition fails (and is retried later as a :class:`~backfiller.storage.errors.Conflict`).
A claim passes over the partitions busy elsewhere (they wait), and decides ``reprocess`` at
that moment, after the busy check, from the latest run of the partition: under ``MISSING`` a
partition that another backfill ran meanwhile is skipped if that run succeeded; under ``ALL``
it runs once the other run is over.

A daemon claims only under a valid lease, checked in the claim's own transaction.

A team's limit on runs in flight (``team_limits``, or the daemon's default) is counted in the
claim's transaction too, over the counters of the team's backfills, after a lock of the team
(PostgreSQL: a transaction advisory lock), so two daemons never pass it together.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, NamedTuple

from sqlalchemy import Integer, Table, bindparam, func, or_, select, text, update

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
    CHUNK,
    SessionRepository,
    active_t,
    backfills_t,
    changed,
    leases_t,
    one_of,
    slots_t,
    unindexed,
)
from backfiller.storage.execution.planning import PlanningRepository
from backfiller.storage.partition_routes import ByPartition
from backfiller.storage.prepared import Prepared
from backfiller.storage.value_lists import DIALECTS, one_of_list


class ClaimConflict(Conflict):
    """A claim lost a race; its transaction must roll back (the next tick tries again)."""


class PendingSlot(NamedTuple):
    """A slot a claim may take."""

    id: int
    position: int
    partition_key: str
    attempts: int


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
        held = await self.rows_of(_LEASE_HELD[self.dialect], {"b_owner": owner, "b_now": now})
        if not held:
            raise LeaseLost(f"the lease of {owner} is gone or expired")

    async def _serialize_job(self, job_name: str) -> None:
        """Serialize claims of one job across daemons (PostgreSQL), for its run limit."""
        if self.dialect == "postgresql":
            await self.session.execute(
                text("SELECT pg_advisory_xact_lock(hashtext(:name))"), {"name": job_name}
            )

    async def _backfill_room(self, pk: int, want: int, backfill_limit: int | None) -> int | None:
        """Lock the backfill's row while it is RUNNING (None: it is not) and say how many of
        ``want`` runs its limit allows now. Every claim starts here (job and asset claims)."""
        locked = await self.rows_of(_LOCK_RUNNING, {"b_pk": pk})
        if not locked:
            return None
        queued, running, backfill_limit = locked[0]  # the row's own (``updateBackfill``)
        if backfill_limit is None:
            return want
        return min(want, backfill_limit - int(queued) - int(running))

    async def team_room(self, team: str | None, want: int, team_limit: int | None) -> int:
        """How many of ``want`` runs a team's limit allows now (None: no limit); on
        PostgreSQL the team's claims are serialized until this transaction ends."""
        if team_limit is None or team is None:
            return want
        if self.dialect == "postgresql":
            await self.session.execute(
                text("SELECT pg_advisory_xact_lock(hashtext(:name))"), {"name": f"team:{team}"}
            )
        ((active,),) = await self.rows_of(_ACTIVE_OF_TEAM, {"b_team": team})
        return min(want, team_limit - int(active or 0))

    async def _room(
        self,
        pk: int,
        job_name: str,
        want: int,
        backfill_limit: int | None,
        job_limit: int | None,
        team: tuple[str | None, int | None] = (None, None),
    ) -> tuple[int, int]:
        """How many runs the limits allow now, and how many runs of the job are active."""
        found = await self.rows_of(_ROOM_OF, {"b_pk": pk})  # no lock: see _count_queued
        if not found:
            return 0, 0
        queued, running, backfill_limit = found[0]  # the row's own (``updateBackfill``)
        allowed = await self.team_room(team[0], want, team[1])
        if backfill_limit is not None:
            allowed = min(allowed, backfill_limit - int(queued) - int(running))
        if job_limit is not None:
            await self._serialize_job(job_name)
        ((active_of_job,),) = await self.rows_of(_ACTIVE_OF_JOB, {"b_job": job_name})
        if job_limit is not None:
            allowed = min(allowed, job_limit - int(active_of_job))
        return allowed, int(active_of_job)

    async def _busy(self, job_name: str, keys: Sequence[str]) -> set[str]:
        """The keys with an active run of ``job_name`` (in any backfill)."""
        busy: set[str] = set()
        for i in range(0, len(keys), CHUNK):
            found = await self.rows_of(
                _BUSY[self.dialect], {"b_job": job_name, "b_keys": keys[i : i + CHUNK]}
            )
            busy.update(key for (key,) in found)
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
        team: tuple[str | None, int | None] = (None, None),
    ) -> Claim:
        """Claim up to ``want`` pending slots of a RUNNING backfill, in launch order.

        Each claimed slot becomes QUEUED with a new QUEUED run leased to ``owner``. Slots whose
        partition has an active run elsewhere are passed over (they wait for it); slots whose
        partition another run made moot are skipped (``reprocess``, see the module's
        docstring). Slots are taken with ``FOR UPDATE SKIP LOCKED`` on PostgreSQL. ``team``:
        the backfill's team and that team's limit on runs in flight (None: none).
        """
        claim = Claim()
        if want <= 0:
            return claim
        await self.check_lease(owner, now)
        allowed, active_of_job = await self._room(
            pk, job_name, want, backfill_limit, job_limit, team
        )
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
            claim.runs = await self._queue(pk, job_name, chosen, owner, now, backfill_limit)
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
            .where(
                slots_t.c.id == bindparam("b_id"),
                slots_t.c.backfill_id == pk,
                unindexed(slots_t.c.status) == SlotState.PENDING,
            )
            .values(status=SlotState.SKIPPED, skip_reason=bindparam("b_reason"), updated_at=now),
            [{"b_id": s.id, "b_reason": reason.value} for s, reason in skip],
        )
        if changed(moved) != len(skip):
            raise ClaimConflict(f"backfill {pk}: slots changed while skipping")
        await self._count(pk, len(skip), now, to="skipped")
        return keep, len(skip)

    async def _count(self, pk: int, n: int, now: datetime, *, to: str) -> None:
        """Move ``n`` from the backfill's ``pending`` counter to ``to``."""
        counted = await self.run_many(_COUNT_TO[to], [{"b_pk": pk, "b_n": n, "b_now": now}])
        if not counted:
            raise ClaimConflict(f"backfill {pk} changed while claiming")

    async def _due_pending(self, pk: int, now: datetime, limit: int) -> list[PendingSlot]:
        """The first ``limit`` PENDING slots of backfill ``pk`` due now, in position order
        (on PostgreSQL locked, skipping those another claim holds)."""
        found = await self.rows_of(
            _DUE_PENDING[self.dialect], {"b_pk": pk, "b_now": now, "b_limit": limit}
        )
        return [PendingSlot._make(row) for row in found]

    async def _mark_queued(self, pk: int, chosen: Sequence[Any], now: datetime) -> None:
        """PENDING -> QUEUED for every slot of ``chosen`` (one attempt more each), or
        ``ClaimConflict`` when any of them is no longer PENDING."""
        moved = await self.update_rows(
            _MARK_QUEUED, [{"b_id": c.id, "b_backfill": pk, "b_now": now} for c in chosen]
        )
        if moved != len(chosen):
            raise ClaimConflict(f"backfill {pk}: slots changed while claiming")

    async def _queue(
        self,
        pk: int,
        job_name: str,
        chosen: list[Any],
        owner: str,
        now: datetime,
        backfill_limit: int | None = None,
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
        await self._count_queued(pk, len(claimed), now, backfill_limit)
        return claimed

    async def _count_queued(
        self, pk: int, n: int, now: datetime, backfill_limit: int | None
    ) -> None:
        """Move ``n`` from the backfill's ``pending`` to ``queued``, last in the claim, within
        its ``maxConcurrentRuns``: the claim locks the backfill's row only here, for the
        moment from this update to its commit, not from its start (claims of one backfill by
        several daemons take disjoint slots meanwhile). The limit was read without a lock
        (``_room``); this conditional update is what enforces it, against the row's limit as
        it is now (``updateBackfill`` may have lowered it since): a claim that would pass it
        (two daemons claimed at once) changes nothing and is retried at the next tick."""
        params = {"b_pk": pk, "b_n": n, "b_now": now}
        if not await self.run_many(_COUNT_QUEUED_WITHIN, [params]):
            raise ClaimConflict(f"backfill {pk} changed, or reached its limit, while claiming")


def _mark_queued(t: Table) -> Any:
    return (
        update(t)
        .where(
            t.c.id == bindparam("b_id"),
            t.c.backfill_id == bindparam("b_backfill"),  # its partition, on PostgreSQL
            unindexed(t.c.status) == SlotState.PENDING,
        )
        .values(
            status=SlotState.QUEUED,
            attempts=t.c.attempts + 1,
            next_attempt_at=None,
            updated_at=bindparam("b_now"),
        )
    )


_MARK_QUEUED = ByPartition(slots_t, _mark_queued)
"""Every claim runs it for each slot it queues, in its backfill's partition on PostgreSQL
(``SessionRepository.update_rows``, ``storage.partition_routes``)."""


def _lease_held(dialect: str) -> Prepared:
    stmt = select(leases_t.c.owner).where(
        leases_t.c.owner == bindparam("b_owner"), leases_t.c.expires_at > bindparam("b_now")
    )
    return Prepared(stmt.with_for_update(read=True) if dialect == "postgresql" else stmt)


def _due_pending(dialect: str) -> Prepared:
    stmt = (
        select(slots_t.c.id, slots_t.c.position, slots_t.c.partition_key, slots_t.c.attempts)
        .where(
            slots_t.c.backfill_id == bindparam("b_pk"),
            slots_t.c.status == SlotState.PENDING,
            or_(
                slots_t.c.next_attempt_at.is_(None), slots_t.c.next_attempt_at <= bindparam("b_now")
            ),
        )
        .order_by(slots_t.c.position)
        .limit(bindparam("b_limit", type_=Integer))
    )
    return Prepared(stmt.with_for_update(skip_locked=True) if dialect == "postgresql" else stmt)


def _busy(dialect: str) -> Prepared:
    """The keys of a job with an active run: ``active_runs``' primary key (one index, where
    ``runs`` on PostgreSQL has one a history range)."""
    return Prepared(
        select(active_t.c.partition_key).where(
            active_t.c.job_name == bindparam("b_job"),
            one_of_list(dialect, active_t.c.partition_key, "b_keys"),
        )
    )


def _count_to(to: str, *, within_limit: bool = False) -> Prepared:
    n = bindparam("b_n", type_=Integer)
    pending, column = backfills_t.c.pending, backfills_t.c[to]
    where = [
        backfills_t.c.id == bindparam("b_pk"),
        backfills_t.c.status == BackfillState.RUNNING,
        pending >= n,
    ]
    if within_limit:
        limit = backfills_t.c.max_concurrent_runs
        where.append(
            or_(limit.is_(None), backfills_t.c.queued + backfills_t.c.running + n <= limit)
        )
    return Prepared(
        update(backfills_t)
        .where(*where)
        .values(
            {
                pending: pending - n,
                column: column + n,
                backfills_t.c.updated_at: bindparam("b_now"),
                backfills_t.c.version: backfills_t.c.version + 1,
            }
        )
    )


# Built once: a claim runs each of them (the dialect's own where PostgreSQL locks rows).
_LEASE_HELD = {dialect: _lease_held(dialect) for dialect in DIALECTS}
_LOCK_RUNNING = Prepared(
    select(backfills_t.c.queued, backfills_t.c.running, backfills_t.c.max_concurrent_runs)
    .where(backfills_t.c.id == bindparam("b_pk"), backfills_t.c.status == BackfillState.RUNNING)
    .with_for_update()
)
"""An asset claim's room: its backfill's row locked for the whole claim (``_backfill_room``)."""
_ROOM_OF = Prepared(
    select(backfills_t.c.queued, backfills_t.c.running, backfills_t.c.max_concurrent_runs).where(
        backfills_t.c.id == bindparam("b_pk"), backfills_t.c.status == BackfillState.RUNNING
    )
)
_ACTIVE_OF_JOB = Prepared(
    select(func.count()).select_from(active_t).where(active_t.c.job_name == bindparam("b_job"))
)
_ACTIVE_OF_TEAM = Prepared(
    select(func.sum(backfills_t.c.queued + backfills_t.c.running)).where(
        backfills_t.c.team == bindparam("b_team"),
        one_of(
            backfills_t.c.status,
            (BackfillState.RUNNING, BackfillState.PAUSED, BackfillState.CANCELING),
        ),
    )
)
"""A team's runs in flight, over its backfills' counters (``ix_backfills_team_id``)."""
_DUE_PENDING = {dialect: _due_pending(dialect) for dialect in DIALECTS}
_BUSY = {dialect: _busy(dialect) for dialect in DIALECTS}
_COUNT_TO = {to: _count_to(to) for to in ("queued", "skipped")}
_COUNT_QUEUED_WITHIN = _count_to("queued", within_limit=True)
"""``_COUNT_TO["queued"]`` within the backfill's limit (``ClaimsRepository._count_queued``)."""
