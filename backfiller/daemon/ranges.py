"""The launch tick's claim for a job with a backfill policy: chunks of consecutive partitions,
one ranged run (one launcher task) each. See ``storage/execution/ranges.py``."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from datetime import datetime

from backfiller.daemon.lease import lease_valid
from backfiller.daemon.report import TickReport
from backfiller.daemon.state import DaemonState
from backfiller.definitions.jobs import JobDefinition
from backfiller.domain.ranges import range_window
from backfiller.launchers.base import RunTask
from backfiller.observability import daemon_metrics
from backfiller.services.selections import Pinned
from backfiller.storage import Database
from backfiller.storage.errors import Conflict, conflicts_translated
from backfiller.storage.execution import ClaimedRange, ExecutionRepository, RangeLimits
from backfiller.storage.records import BackfillRecord
from backfiller.storage.run_credentials import mint_run_credentials

logger = logging.getLogger("backfiller.daemon")

Clock = Callable[[], datetime]


async def claim_ranged_runs(
    database: Database,
    clock: Clock,
    state: DaemonState,
    target: tuple[BackfillRecord, JobDefinition, Pinned],
    want: int,
    report: TickReport,
) -> list[RunTask]:
    """Claim up to ``want`` ranged runs of a backfill of a job with a backfill policy."""
    record, job, pinned = target
    assert job.backfill_policy is not None
    now = clock()
    if not lease_valid(state, now):
        return []
    began = time.perf_counter()
    limits = RangeLimits(
        per_run=job.backfill_policy.partitions_per_run,
        backfill_limit=record.max_concurrent_runs,
        job_limit=job.max_concurrent_runs,
    )
    try:
        async with conflicts_translated(), database.write() as session:
            claim = await ExecutionRepository(session).claim_ranges(
                record.id,
                record.job_name,
                want,
                now,
                state.owner,
                pinned.space.index_of,
                limits,
                reprocess=record.reprocess,
            )
    except Conflict as exc:
        logger.info("claim of backfill %s lost a race, retrying later: %s", record.id, exc)
        report.conflicts += 1
        return []
    report.skipped += claim.skipped
    daemon_metrics.observe_claim(time.perf_counter() - began)
    ids = [r.lead.run_id for r in claim.ranges]
    credentials = await mint_run_credentials(
        database, record.id, record.creator, ids, now, job.timeout_seconds
    )
    tags = {**dict(job.tags), **{str(k): str(v) for k, v in record.tags}}
    return [
        _task_of(record, job, pinned, r, tags, credentials.get(r.lead.run_id)) for r in claim.ranges
    ]


def _task_of(
    record: BackfillRecord,
    job: JobDefinition,
    pinned: Pinned,
    claimed: ClaimedRange,
    tags: dict[str, str],
    credential: str | None,
) -> RunTask:
    keys = claimed.partition_keys
    window = range_window([pinned.space.window(k) for k in keys])
    return RunTask(
        run_id=claimed.lead.run_id,
        backfill_id=record.id,
        job_name=record.job_name,
        partition_key=claimed.lead.partition_key,
        attempt=claimed.lead.attempt,
        run_config=record.run_config or {},
        tags=tags,
        partition_start=window[0] if window else None,
        partition_end=window[1] if window else None,
        timeout_seconds=job.timeout_seconds,
        credential=credential,
        partition_keys=keys,
    )
