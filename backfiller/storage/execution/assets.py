"""Claims of asset backfills: a slot is claimable once what it depends on has succeeded.

An asset backfill's slot is keyed ``asset/partition``. Its run is a run of the asset (the run's
``job_name`` is the asset's name), so ``active_runs`` keeps one active run per (asset,
partition) across all backfills, as for jobs.

A pending slot is, at claim time:

* **ready** when every upstream slot it depends on (``needs``: per upstream asset, slot keys, or
  None for every slot of that asset in the backfill) has succeeded, or was skipped because an
  earlier run had already succeeded; upstream keys without a slot are outside the backfill and
  are not waited for (an upstream slot is always planned before its downstream ones);
* **blocked** when one of them failed after its retries, was canceled, or was itself skipped
  because its upstream failed: the slot becomes SKIPPED (``upstream_failed``) in the same
  transaction, so the rest of the graph goes on and the counts stay exact;
* **waiting** otherwise (an upstream is pending, queued or running).

A claim reads pending slots in position order a page at a time (positions interleave the assets
partition by partition, see ``backfiller.planning.asset_plan``), so a downstream slot is claimed
in the first claim after its last upstream succeeds: the daemon claims right after it writes
results.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Mapping, Sequence
from datetime import datetime
from typing import Any

from sqlalchemy import bindparam, func, or_, select, update

from backfiller.domain import (
    Reprocess,
    RunState,
    SkipReason,
    SlotState,
    skip_reason_at_claim,
)
from backfiller.domain.ranges import chunk_consecutive
from backfiller.storage.execution.claims import Claim, ClaimConflict, ClaimedRun
from backfiller.storage.execution.common import ACTIVE, CHUNK, active_t, changed, slots_t, unindexed
from backfiller.storage.execution.planning import PlanningRepository
from backfiller.storage.execution.ranges import RangeClaimsRepository, RangedAsset
from backfiller.storage.records import RunRecord, SlotRecord

Needs = Callable[[str], Sequence[tuple[str, Sequence[str] | None]]]
"""A slot key's upstream needs: per upstream asset, its slot keys, or None for all of them."""

PAGE = 256
MAX_SCAN = 4_096
VERDICT_SLICE = 32

_SATISFIED_SKIPS = {SkipReason.ALREADY_SUCCEEDED.value}
_FAILED_SKIPS = {SkipReason.UPSTREAM_FAILED.value, SkipReason.ALREADY_FAILED.value}

READY, WAITING, BLOCKED = "ready", "waiting", "blocked"


def _split(slot_key: str) -> tuple[str, str]:
    asset, _, key = slot_key.partition("/")
    return asset, key


def verdict_of(status: SlotState, skip_reason: str | None) -> str:
    """What an upstream slot's state means for the slots that depend on it."""
    if status is SlotState.SUCCEEDED:
        return READY
    if status is SlotState.SKIPPED:
        return READY if skip_reason in _SATISFIED_SKIPS else BLOCKED
    if status in (SlotState.FAILED, SlotState.CANCELED):
        return BLOCKED
    return WAITING


class AssetClaimsRepository(RangeClaimsRepository):
    async def claim_asset_slots(
        self,
        pk: int,
        want: int,
        now: datetime,
        owner: str,
        needs: Needs,
        *,
        reprocess: Reprocess = Reprocess.ALL,
        backfill_limit: int | None = None,
        asset_limits: Mapping[str, int | None] | None = None,
        ranged: Mapping[str, RangedAsset] | None = None,
    ) -> Claim:
        """Claim up to ``want`` ready slots of a RUNNING asset backfill, in position order,
        and skip the blocked ones met on the way (see the module's docstring). The slots of
        the ``ranged`` assets (a backfill policy) are claimed as ranged runs (``want`` counts
        runs), see :meth:`_claim_ranges_of_assets`."""
        claim = Claim()
        if want <= 0:
            return claim
        await self.check_lease(owner, now)
        if ranged:
            locked = await self._ranged_backfill_room(pk, want, backfill_limit)
            allowed = locked[0] if locked is not None else 0
        else:
            allowed = await self._backfill_room(pk, want, backfill_limit) or 0
        if allowed <= 0:
            return claim
        per_run = max((r.per_run for r in (ranged or {}).values()), default=1)
        # With asset limits or ranged assets, ready slots may be dropped or regrouped below:
        # read whole pages then; otherwise stop the scan once ``allowed`` slots are ready.
        limited = any(v is not None for v in (asset_limits or {}).values())
        enough = None if limited or ranged else allowed
        ready, blocked = await self._scan(pk, now, needs, allowed * per_run, enough)
        scanned = {str(s.partition_key) for s in ready}
        if blocked:
            await self._skip(pk, blocked, SkipReason.UPSTREAM_FAILED, now)
            claim.skipped += len(blocked)
        ready = await self._not_busy(ready)
        if reprocess is not Reprocess.ALL and ready:
            ready, moot = await self._moot(ready, reprocess)
            for reason, slots in moot.items():
                await self._skip(pk, slots, reason, now)
                claim.skipped += len(slots)
        if ranged:
            limits = (asset_limits or {}, ranged)
            await self._claim_ranges_of_assets(
                claim, pk, ready, scanned, limits, allowed, now, owner
            )
            return claim
        chosen = await self._within_asset_limits(ready, asset_limits or {})
        chosen = chosen[:allowed]
        if chosen:
            claim.runs = await self._queue_assets(pk, chosen, owner, now)
        return claim

    async def _claim_ranges_of_assets(
        self,
        claim: Claim,
        pk: int,
        ready: list[Any],
        scanned: set[str],
        limits: tuple[Mapping[str, int | None], Mapping[str, RangedAsset]],
        allowed: int,
        now: datetime,
        owner: str,
    ) -> None:
        """Claim ``ready`` slots as runs: one each for assets without a policy, chunks of
        consecutive partitions for the ``ranged`` ones, up to ``allowed`` runs in position order.

        A chunk shorter than its policy allows waits while a partition next to it in the
        backfill is still pending and was not ready (its upstream is not done), so a ranged
        asset downstream of single runs is not run one partition at a time.
        """
        asset_limits, ranged = limits
        plain = [s for s in ready if _split(str(s.partition_key))[0] not in ranged]
        units = [
            (int(s.position), [s], False)
            for s in await self._within_asset_limits(plain, asset_limits)
        ]
        for asset, spec in ranged.items():
            mine = [s for s in ready if _split(str(s.partition_key))[0] == asset]
            if mine:
                units += await self._asset_chunks(
                    pk, asset, mine, scanned, spec, asset_limits.get(asset)
                )
        units = sorted(units, key=lambda u: u[0])[:allowed]
        singles = [u[1][0] for u in units if not u[2]]
        if singles:
            claim.runs = await self._queue_assets(pk, singles, owner, now)
        chunks = [u[1] for u in units if u[2]]
        if chunks:
            claim.ranges = await self._queue_ranges(pk, _split, chunks, owner, now)

    async def _asset_chunks(
        self,
        pk: int,
        asset: str,
        mine: list[Any],
        scanned: set[str],
        spec: RangedAsset,
        limit: int | None,
    ) -> list[tuple[int, list[Any], bool]]:
        """The ranged runs of ``asset`` to claim now: ``(position, slots in key order, True)``."""
        keys = [_split(str(s.partition_key))[1] for s in mine]
        indexes = [spec.key_index(k) for k in keys]
        groups = chunk_consecutive(indexes, spec.per_run)
        edges = {
            f"{asset}/{n}"
            for g in groups
            if len(g) < spec.per_run
            for i in (g[0], g[-1])
            for n in spec.neighbours(keys[i])
        }
        waiting = await self._pending_among(pk, sorted(edges - scanned))
        room = len(groups)
        if limit is not None:
            await self._serialize_job(asset)
            room = limit - await self._active_leads(RunRecord.job_name == asset)
        out: list[tuple[int, list[Any], bool]] = []
        for g in groups:
            around = {f"{asset}/{n}" for i in (g[0], g[-1]) for n in spec.neighbours(keys[i])}
            if len(g) < spec.per_run and around & waiting:
                continue
            if len(out) >= room:
                break
            ordered = sorted(g, key=lambda i: indexes[i] or 0)
            out.append((int(mine[g[0]].position), [mine[i] for i in ordered], True))
        return out

    async def _pending_among(self, pk: int, slot_keys: list[str]) -> set[str]:
        """Which of ``slot_keys`` are slots of the backfill still PENDING."""
        found: set[str] = set()
        for i in range(0, len(slot_keys), CHUNK):
            result = await self.session.execute(
                select(SlotRecord.partition_key).where(
                    SlotRecord.backfill_id == pk,
                    SlotRecord.status == SlotState.PENDING,
                    SlotRecord.partition_key.in_(slot_keys[i : i + CHUNK]),
                )
            )
            found.update(str(k) for k in result.scalars())
        return found

    async def _scan(
        self, pk: int, now: datetime, needs: Needs, allowed: int, enough: int | None
    ) -> tuple[list[Any], list[Any]]:
        """Pending slots in position order, a page at a time: the ready and the blocked.

        With ``enough``, verdicts are read a slice of the page at a time and the scan stops
        once that many slots are ready (a claim of one run reads one slice, not a page)."""
        ready: list[Any] = []
        blocked: list[Any] = []
        after = -1
        scanned = 0
        while len(ready) < allowed and scanned < MAX_SCAN:
            stmt = (
                select(
                    SlotRecord.id,
                    SlotRecord.position,
                    SlotRecord.partition_key,
                    SlotRecord.attempts,
                )
                .where(
                    SlotRecord.backfill_id == pk,
                    SlotRecord.status == SlotState.PENDING,
                    SlotRecord.position > after,
                    or_(SlotRecord.next_attempt_at.is_(None), SlotRecord.next_attempt_at <= now),
                )
                .order_by(SlotRecord.position)
                .limit(PAGE)
            )
            if self.dialect == "postgresql":
                stmt = stmt.with_for_update(skip_locked=True)
            page = (await self.session.execute(stmt)).all()
            if not page:
                break
            scanned += len(page)
            after = int(page[-1].position)
            for lo in range(0, len(page), VERDICT_SLICE):
                part = page[lo : lo + VERDICT_SLICE]
                verdicts = await self._verdicts(pk, [str(s.partition_key) for s in part], needs)
                for s in part:
                    v = verdicts[str(s.partition_key)]
                    if v == READY:
                        ready.append(s)
                    elif v == BLOCKED:
                        blocked.append(s)
                if enough is not None and len(ready) >= enough:
                    break
        return ready, blocked

    async def _verdicts(self, pk: int, keys: Sequence[str], needs: Needs) -> dict[str, str]:
        """Each slot key's verdict, from the states of the upstream slots it needs."""
        wanted: dict[str, Sequence[tuple[str, Sequence[str] | None]]] = {k: needs(k) for k in keys}
        specific = sorted({u for n in wanted.values() for _, us in n if us for u in us})
        states: dict[str, str] = {}
        for i in range(0, len(specific), CHUNK):
            result = await self.session.execute(
                select(SlotRecord.partition_key, SlotRecord.status, SlotRecord.skip_reason).where(
                    SlotRecord.backfill_id == pk,
                    SlotRecord.partition_key.in_(specific[i : i + CHUNK]),
                )
            )
            for key, status, reason in result.all():
                states[str(key)] = verdict_of(SlotState(status), reason)
        whole: dict[str, str] = {}
        out: dict[str, str] = {}
        for key, per_asset in wanted.items():
            found: list[str] = []
            for asset, ups in per_asset:
                if ups is None:
                    if asset not in whole:
                        whole[asset] = await self._whole_asset(pk, asset)
                    found.append(whole[asset])
                else:
                    found += [states[u] for u in ups if u in states]
            out[key] = BLOCKED if BLOCKED in found else WAITING if WAITING in found else READY
        return out

    async def _whole_asset(self, pk: int, asset: str) -> str:
        """The verdict of every slot of ``asset`` in the backfill, taken together."""
        low, high = f"{asset}/", f"{asset}0"
        result = await self.session.execute(
            select(SlotRecord.status, SlotRecord.skip_reason, func.count())
            .where(
                SlotRecord.backfill_id == pk,
                SlotRecord.partition_key >= low,
                SlotRecord.partition_key < high,
            )
            .group_by(SlotRecord.status, SlotRecord.skip_reason)
        )
        found = {verdict_of(SlotState(s), r) for s, r, _ in result.all()}
        return BLOCKED if BLOCKED in found else WAITING if WAITING in found else READY

    async def _not_busy(self, slots: list[Any]) -> list[Any]:
        """The slots whose (asset, partition) has no active run in any backfill."""
        by_asset: dict[str, list[str]] = defaultdict(list)
        for s in slots:
            asset, key = _split(str(s.partition_key))
            by_asset[asset].append(key)
        busy: set[str] = set()
        for asset, keys in by_asset.items():
            for i in range(0, len(keys), CHUNK):
                result = await self.session.execute(
                    select(RunRecord.partition_key).where(
                        RunRecord.job_name == asset,
                        RunRecord.partition_key.in_(keys[i : i + CHUNK]),
                        RunRecord.status.in_(ACTIVE),
                    )
                )
                busy.update(f"{asset}/{k}" for k in result.scalars())
        return [s for s in slots if str(s.partition_key) not in busy]

    async def _moot(
        self, slots: list[Any], reprocess: Reprocess
    ) -> tuple[list[Any], dict[SkipReason, list[Any]]]:
        """Keep the slots to run; the others, by skip reason (``reprocess``, as for jobs)."""
        planning = PlanningRepository(self.session)
        by_asset: dict[str, list[Any]] = defaultdict(list)
        for s in slots:
            by_asset[_split(str(s.partition_key))[0]].append(s)
        latest: dict[str, RunState] = {}
        for asset, group in by_asset.items():
            found = await planning.latest_states(
                asset, [_split(str(s.partition_key))[1] for s in group]
            )
            latest.update({f"{asset}/{k}": v for k, v in found.items()})
        keep: list[Any] = []
        moot: dict[SkipReason, list[Any]] = defaultdict(list)
        for s in slots:
            reason = skip_reason_at_claim(reprocess, latest.get(str(s.partition_key)), s.attempts)
            if reason is None:
                keep.append(s)
            else:
                moot[reason].append(s)
        return keep, moot

    async def _within_asset_limits(
        self, slots: list[Any], limits: Mapping[str, int | None]
    ) -> list[Any]:
        """Drop the slots of assets at their ``max_concurrent_runs`` (across backfills)."""
        room: dict[str, int] = {}
        out: list[Any] = []
        for s in slots:
            asset = _split(str(s.partition_key))[0]
            limit = limits.get(asset)
            if limit is None:
                out.append(s)
                continue
            if asset not in room:
                await self._serialize_job(asset)
                active = (
                    await self.session.execute(
                        select(func.count()).where(active_t.c.job_name == asset)
                    )
                ).scalar_one()
                room[asset] = limit - int(active)
            if room[asset] > 0:
                room[asset] -= 1
                out.append(s)
        return out

    async def _skip(self, pk: int, slots: list[Any], reason: SkipReason, now: datetime) -> None:
        moved = await self.session.execute(
            update(slots_t)
            .where(
                slots_t.c.id == bindparam("b_id"),
                slots_t.c.backfill_id == pk,
                unindexed(slots_t.c.status) == SlotState.PENDING,
            )
            .values(status=SlotState.SKIPPED, skip_reason=reason.value, updated_at=now),
            [{"b_id": s.id} for s in slots],
        )
        if changed(moved) != len(slots):
            raise ClaimConflict(f"backfill {pk}: slots changed while skipping")
        await self._count(pk, len(slots), now, to="skipped")

    async def _queue_assets(
        self, pk: int, chosen: list[Any], owner: str, now: datetime
    ) -> list[ClaimedRun]:
        """PENDING -> QUEUED for ``chosen``, each with a new QUEUED run of its asset."""
        await self._mark_queued(pk, chosen, now)
        split = [_split(str(c.partition_key)) for c in chosen]
        run_ids = await self.insert_runs(
            [
                {
                    "backfill_id": pk,
                    "slot_id": c.id,
                    "job_name": asset,
                    "partition_key": key,
                    "attempt": int(c.attempts) + 1,
                    "status": RunState.QUEUED,
                    "queued_at": now,
                    "lease_owner": owner,
                }
                for c, (asset, key) in zip(chosen, split, strict=True)
            ]
        )
        claimed = [
            ClaimedRun(rid, int(c.id), int(c.position), str(c.partition_key), int(c.attempts) + 1)
            for rid, c in zip(run_ids, chosen, strict=True)
        ]
        await self.record_partition_states(
            [
                (asset, key, RunState.QUEUED, c.run_id)
                for c, (asset, key) in zip(claimed, split, strict=True)
            ],
            now,
        )
        await self._count(pk, len(claimed), now, to="queued")
        return claimed
