"""What a pending partition waits for: another backfill's active run of the same partition.

A claim passes over a partition that has a QUEUED or RUNNING run of the same job (or asset) in
another backfill (``storage.execution.claims``); its slot stays PENDING meanwhile. This module
says so on a page of ``Backfill.partitions`` (``BackfillPartition.waitingFor``), with one read
per job or asset on the page; ``previewBackfill`` says it from ``services.launching``.
"""

from __future__ import annotations

from collections import defaultdict

from backfiller.planning.asset_plan import split_slot_key
from backfiller.resolvers.translate import partition_wait
from backfiller.schema.backfills import BackfillPartition
from backfiller.schema.enums import PartitionStatus
from backfiller.storage import Database
from backfiller.storage.execution.waits import WaitsRepository
from backfiller.storage.records import BackfillRecord


async def mark_waits(
    database: Database, record: BackfillRecord, page: list[BackfillPartition]
) -> None:
    """Set ``waiting_for`` on the pending partitions of ``page`` that wait for a run."""
    by_job: dict[str, list[tuple[str, BackfillPartition]]] = defaultdict(list)
    for partition in page:
        if partition.status is not PartitionStatus.PENDING:
            continue
        if record.asset_target is not None:  # an asset backfill's key is ``asset/partition``
            job, key = split_slot_key(partition.key)
        else:
            job, key = record.job_name, partition.key
        by_job[job].append((key, partition))
    if not by_job:
        return
    async with database.read() as session:
        reads = WaitsRepository(session)
        for job, items in by_job.items():
            active = await reads.active_runs(job, [k for k, _ in items], other_than=record.id)
            for key, partition in items:
                run = active.get(key)
                if run is not None:
                    partition.waiting_for = partition_wait(run)
