"""The daemon's work on asset backfills: planning their slots and claiming the ready ones.

The ticks (``backfiller.daemon.ticks``) hand asset backfills here. Planning materializes slots
a bounded chunk at a time, asset by asset in topological order (an upstream slot always exists
before the slots that depend on it); claiming asks storage for the slots whose upstream slots
have all succeeded (see ``backfiller.storage.execution.assets``), and runs them as runs of their
asset. The backfill's pinned plan (its graph edges' mappings over per-asset key spaces) is kept
per backfill by the daemon's pin cache (``services.selections.PinCache``), so a claim costs one
transaction whatever the graph.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from datetime import datetime

from backfiller.daemon.asset_ranges import asset_range_task, ranged_assets
from backfiller.daemon.lease import lease_valid, lose_lease
from backfiller.daemon.report import TickReport
from backfiller.daemon.state import DaemonState
from backfiller.definitions.loading import Definitions
from backfiller.domain import BackfillKind, BackfillState, Reprocess, SkipReason, skip_reason_for
from backfiller.launchers.base import Launcher, RunTask
from backfiller.planning.asset_plan import split_slot_key
from backfiller.services.selections import PinnedAssets, Unpinnable
from backfiller.storage import Database
from backfiller.storage.errors import Conflict, LeaseLost, conflicts_translated
from backfiller.storage.execution import ExecutionRepository, PlannedSlot
from backfiller.storage.execution.assets import AssetClaimsRepository
from backfiller.storage.records import BackfillRecord

logger = logging.getLogger("backfiller.daemon")

Clock = Callable[[], datetime]

PLAN_CHUNKS_PER_TICK = 20
PLAN_SECONDS_PER_TICK = 0.1
"""Planning stops taking chunks after this long in one tick (one chunk at least), so that a
100,000-partition graph is materialized over many ticks with claims in between, not in a few
ticks of seconds each that hold up every run's start."""


async def plan_asset_backfill(
    database: Database,
    definitions: Definitions,
    clock: Clock,
    state: DaemonState,
    record: BackfillRecord,
) -> TickReport:
    """Start a requested asset backfill and materialize its slots, a chunk at a time."""
    report = TickReport()
    pinned = await state.pins.pin_assets(database, definitions, record)
    if isinstance(pinned, Unpinnable):
        async with database.write() as session:
            if await ExecutionRepository(session).fail_backfill(record.id, pinned.reason, clock()):
                report.failed_backfills += 1
        return report
    if record.status is BackfillState.REQUESTED:
        async with database.write() as session:
            if await ExecutionRepository(session).start_backfill(record.id, clock()):
                report.started_backfills += 1
                state.forget_backfills()
    planned = record.planned
    began = time.monotonic()
    for _ in range(PLAN_CHUNKS_PER_TICK):
        if planned >= record.total:
            break
        stop = min(record.total, planned + state.plan_window)
        at = [pinned.target.at_cursor(g, pinned.spaces, record.order) for g in range(planned, stop)]
        async with database.write() as session:
            repo = ExecutionRepository(session)
            reasons = await _skips_at_plan(repo, record.reprocess, [k for _, k in at])
            slots = [PlannedSlot(p, k, reasons.get(k)) for p, k in at]
            ok = await repo.plan_window(record.id, planned, slots, clock())
        if not ok:
            break
        report.planned += len(slots)
        report.skipped += len(reasons)
        planned = stop
        if time.monotonic() - began >= PLAN_SECONDS_PER_TICK:
            break
    return report


async def _skips_at_plan(
    repo: ExecutionRepository, reprocess: Reprocess, slot_keys: list[str]
) -> dict[str, SkipReason]:
    if reprocess is Reprocess.ALL:
        return {}
    by_asset: dict[str, list[str]] = {}
    for slot in slot_keys:
        asset, key = split_slot_key(slot)
        by_asset.setdefault(asset, []).append(key)
    reasons: dict[str, SkipReason] = {}
    for asset, keys in by_asset.items():
        for key, run_state in (await repo.latest_states(asset, keys)).items():
            reason = skip_reason_for(reprocess, run_state)
            if reason is not None:
                reasons[f"{asset}/{key}"] = reason
    return reasons


async def launch_asset_runs(
    database: Database,
    definitions: Definitions,
    clock: Clock,
    launcher: Launcher,
    state: DaemonState,
    room: int,
) -> TickReport:
    """Claim the ready slots of asset backfills (up to ``room`` runs) and launch them.

    Asset backfills are served before job backfills; a claim checks the limits on the locked
    backfill row, so cached counts only decide which backfills to ask.
    """
    report = TickReport()
    records = await state.running_backfills(database)
    for record in records:
        if room <= 0:
            break
        if record.kind is not BackfillKind.ASSETS or record.pending <= 0:
            continue
        pinned = await state.pins.pin_assets(database, definitions, record)
        if isinstance(pinned, Unpinnable):
            continue
        tasks = await _claim(database, definitions, clock, state, record, pinned, room, report)
        if tasks:
            launcher.submit(tasks)
            room -= len(tasks)
            report.claimed += len(tasks)
    return report


async def _claim(
    database: Database,
    definitions: Definitions,
    clock: Clock,
    state: DaemonState,
    record: BackfillRecord,
    pinned: PinnedAssets,
    want: int,
    report: TickReport,
) -> list[RunTask]:
    now = clock()
    if not lease_valid(state, now):
        return []
    limits = {
        name: a.job.max_concurrent_runs
        for name in pinned.target.assets
        if (a := definitions.get_asset(name)) is not None
    }
    try:
        async with conflicts_translated(), database.write() as session:
            claim = await AssetClaimsRepository(session).claim_asset_slots(
                record.id,
                want,
                now,
                state.owner,
                pinned.needs,
                reprocess=record.reprocess,
                backfill_limit=record.max_concurrent_runs,
                asset_limits=limits,
                ranged=ranged_assets(definitions, pinned.spaces),
            )
    except Conflict as exc:
        logger.info("claim of asset backfill %s lost a race, retrying later: %s", record.id, exc)
        report.conflicts += 1
        return []
    except LeaseLost as exc:
        lose_lease(state, None, str(exc))
        return []
    report.skipped += claim.skipped
    tasks = [asset_range_task(definitions, record, pinned.spaces, r) for r in claim.ranges]
    for c in claim.runs:
        asset_name, key = split_slot_key(c.partition_key)
        asset = definitions.get_asset(asset_name)
        assert asset is not None
        window = pinned.spaces[asset_name].window(key)
        tasks.append(
            RunTask(
                run_id=c.run_id,
                backfill_id=record.id,
                job_name=asset_name,
                partition_key=key,
                attempt=c.attempt,
                run_config=record.run_config or {},
                tags={**dict(asset.job.tags), **{str(k): str(v) for k, v in record.tags}},
                partition_start=window[0] if window else None,
                partition_end=window[1] if window else None,
                timeout_seconds=asset.job.timeout_seconds,
            )
        )
    return tasks
