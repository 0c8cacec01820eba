"""``Backfill.timeline``: one consistent read of a backfill's status, counts, partition status
ranges and newest runs (``storage/timeline_reads.py``), so that the UI's numbers agree."""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING

import strawberry

from backfiller.ids import run_id
from backfiller.resolvers.context import PublicError
from backfiller.resolvers.translate import (
    backfill_status,
    counts_from_record,
    failure_reason,
    run_status,
)
from backfiller.schema.backfills import BackfillCounts
from backfiller.schema.enums import BackfillStatus
from backfiller.schema.timeline import MAX_TIMELINE_RUNS, RunTimeline, TimelineRuns
from backfiller.storage.repositories import BackfillRepository, SlotReads
from backfiller.storage.timeline_reads import count_runs, one_snapshot, timeline_runs

if TYPE_CHECKING:
    from backfiller.resolvers.source import StorageSource


def _empty(source: StorageSource) -> RunTimeline:
    columns = TimelineRuns(
        ids=[], jobs=[], partition_keys=[], attempts=[], statuses=[], workers=[],
        queued_at=[], started_at=[], ended_at=[], failure_reasons=[], error_messages=[],
    )  # fmt: skip
    zero = BackfillCounts.of(
        total=0, pending=0, queued=0, running=0, succeeded=0, failed=0, canceled=0, skipped=0
    )
    return RunTimeline(
        read_at=source.services.clock(),
        status=BackfillStatus.REQUESTED,
        counts=zero,
        partition_status_ranges=[],
        runs=columns,
        total_runs=0,
        truncated=False,
    )


def _seconds(at: datetime | None) -> float | None:
    return at.timestamp() if at is not None else None


async def read_timeline(source: StorageSource, pk: int, last_runs: int) -> RunTimeline:
    """The timeline of backfill ``pk``, every part of it from one snapshot.

    Raises:
        PublicError: ``lastRuns`` outside 0 to ``MAX_TIMELINE_RUNS`` (``INVALID_ARGUMENT``).
    """
    if not 0 <= last_runs <= MAX_TIMELINE_RUNS:
        raise PublicError(f"`lastRuns` must be between 0 and {MAX_TIMELINE_RUNS}")
    async with source.services.database.read() as session:
        await one_snapshot(session)
        record = await BackfillRepository(session).get(pk)
        if record is None:
            return _empty(source)
        job_backfill = record.asset_target is None
        changes = (
            await SlotReads(session).status_changes(pk) if job_backfill and record.planned else []
        )
        runs = await timeline_runs(session, pk, last_runs)
        total = await count_runs(session, pk) if len(runs) >= last_runs else len(runs)
        read_at = source.services.clock()
    ranges = await source.fold_status_ranges(record, changes) if job_backfill else []
    columns = TimelineRuns(
        ids=[strawberry.ID(run_id(r.id)) for r in runs],
        jobs=[r.job_name for r in runs],
        partition_keys=[r.partition_key for r in runs],
        attempts=[r.attempt for r in runs],
        statuses=[run_status(r.status) for r in runs],
        workers=[r.worker for r in runs],
        queued_at=[r.queued_at.timestamp() for r in runs],
        started_at=[_seconds(r.started_at) for r in runs],
        ended_at=[_seconds(r.ended_at) for r in runs],
        failure_reasons=[failure_reason(r.failure_reason) for r in runs],
        error_messages=[r.error_message for r in runs],
    )
    return RunTimeline(
        read_at=read_at,
        status=backfill_status(record.status),
        counts=counts_from_record(record),
        partition_status_ranges=ranges,
        runs=columns,
        total_runs=total,
        truncated=total > len(runs),
    )
