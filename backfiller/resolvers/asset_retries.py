"""Retrying an asset backfill: only what failed, and what was skipped because of it.

The child backfill covers, per asset, the keys of the parent's slots in the statuses asked for
(FAILED by default) plus the slots skipped because an upstream failed (``UPSTREAM_FAILED``); a
slot of the parent that succeeded is not part of the child, so nothing healthy runs again and
nothing waits for it.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable

from sqlalchemy import or_, select

from backfiller import domain
from backfiller.asset_plan import AssetPart, AssetTarget, slot_key, split_slot_key
from backfiller.planning import request_fingerprint
from backfiller.resolvers.context import Context
from backfiller.schema.enums import RetryInclude
from backfiller.storage.records import BackfillRecord, SlotRecord
from backfiller.storage.repositories import NewBackfill
from backfiller.storage.selections import key_space_of


async def asset_retry(
    ctx: Context,
    parent: BackfillRecord,
    include: Iterable[RetryInclude],
    wanted: set[domain.SlotState],
    idempotency_key: str | None,
) -> NewBackfill | str:
    """The child of an asset backfill, or why there is nothing to retry."""
    assert parent.asset_target is not None
    target = AssetTarget.from_json(parent.asset_target)
    async with ctx.database.read() as session:
        rows = (
            await session.execute(
                select(SlotRecord.partition_key).where(
                    SlotRecord.backfill_id == parent.id,
                    or_(
                        SlotRecord.status.in_(list(wanted)),
                        (SlotRecord.status == domain.SlotState.SKIPPED)
                        & (SlotRecord.skip_reason == domain.SkipReason.UPSTREAM_FAILED.value),
                    ),
                )
            )
        ).scalars()
        chosen: dict[str, set[str]] = defaultdict(set)
        for value in rows:
            name, key = split_slot_key(str(value))
            chosen[name].add(key)
    parts: list[AssetPart] = []
    for part in target.parts:
        keys = chosen.get(part.name)
        asset = ctx.definitions.get_asset(part.name)
        if not keys or asset is None:
            continue
        space = await key_space_of(asset.key_partitions, parent.created_at, ctx.database)
        ordered = sorted(keys, key=lambda k: space.index_of(k) or 0)
        parts.append(AssetPart(part.name, part.fingerprint, 0, len(ordered), tuple(ordered)))
    if not parts:
        return "the backfill has no partition in the statuses to retry"
    child = AssetTarget(target.names, target.upstream, target.downstream, tuple(parts))
    slot_keys = [slot_key(p.name, k) for p in parts for k in p.keys or ()]
    return NewBackfill(
        job_name=parent.job_name,
        selection_kind=domain.SelectionKind.KEYS,
        range_start=None,
        range_end=None,
        keys=slot_keys,
        partitions_fingerprint=parts[0].fingerprint,
        first_index=0,
        total=child.total,
        reprocess=domain.Reprocess.ALL,
        order=parent.order,
        max_concurrent_runs=parent.max_concurrent_runs,
        run_config=parent.run_config,
        tags=[(k, v) for k, v in parent.tags],
        title=f"Retry of {parent.title}" if parent.title else f"Retry of bf_{parent.id}",
        description=parent.description,
        idempotency_key=idempotency_key,
        request_fingerprint=request_fingerprint(
            {"retry": parent.id, "include": sorted(i.value for i in include)}
        ),
        creator=ctx.actor,
        parent_id=parent.id,
        asset_target=child.to_json(),
    )
