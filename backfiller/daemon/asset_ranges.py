"""Ranged runs of assets with a backfill policy, in asset backfills: what storage needs to
chunk an asset's ready partitions (``storage/execution/assets.py``), and the launcher's task of
a ranged run. See docs/ranged-runs.md."""

from __future__ import annotations

from collections.abc import Callable

from backfiller.definitions.loading import Definitions
from backfiller.definitions.partitions import KeySpace
from backfiller.domain.ranges import range_window
from backfiller.launchers.base import RunTask
from backfiller.planning.asset_plan import split_slot_key
from backfiller.storage.execution import ClaimedRange
from backfiller.storage.execution.ranges import RangedAsset
from backfiller.storage.records import BackfillRecord


def ranged_assets(definitions: Definitions, spaces: dict[str, KeySpace]) -> dict[str, RangedAsset]:
    """The assets of the backfill (by key space) that have a backfill policy."""
    out: dict[str, RangedAsset] = {}
    for name, space in spaces.items():
        found = definitions.get_asset(name)
        if found is None or found.job.backfill_policy is None:
            continue
        out[name] = RangedAsset(
            per_run=found.job.backfill_policy.partitions_per_run,
            key_index=space.index_of,
            neighbours=_neighbours_in(space),
        )
    return out


def _neighbours_in(space: KeySpace) -> Callable[[str], tuple[str, ...]]:
    def neighbours(key: str) -> tuple[str, ...]:
        index = space.index_of(key)
        if index is None:
            return ()
        return tuple(space.key_at(i) for i in (index - 1, index + 1) if 0 <= i < len(space))

    return neighbours


def asset_range_task(
    definitions: Definitions,
    record: BackfillRecord,
    spaces: dict[str, KeySpace],
    claimed: ClaimedRange,
) -> RunTask:
    """The launcher's task of one ranged run of an asset."""
    asset_name, first = split_slot_key(claimed.lead.partition_key)
    asset = definitions.get_asset(asset_name)
    assert asset is not None
    keys = tuple(split_slot_key(k)[1] for k in claimed.partition_keys)
    window = range_window([spaces[asset_name].window(k) for k in keys])
    return RunTask(
        run_id=claimed.lead.run_id,
        backfill_id=record.id,
        job_name=asset_name,
        partition_key=first,
        attempt=claimed.lead.attempt,
        run_config=record.run_config or {},
        tags={**dict(asset.job.tags), **{str(k): str(v) for k, v in record.tags}},
        partition_start=window[0] if window else None,
        partition_end=window[1] if window else None,
        timeout_seconds=asset.job.timeout_seconds,
        partition_keys=keys,
    )
