"""Waits: which partitions another backfill is running now, so that a slot of them waits.

A claim passes over a partition that has an active (QUEUED or RUNNING) run of the same job or
asset in another backfill (see ``claims``): its slot stays PENDING until that run ends. These
reads say so to users, in a preview and in a backfill's partitions, from the same rows the
claim looks at (``active_runs`` holds at most one active run per (job, partition), and the
partial index ``ix_runs_active_partition`` serves these reads).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from sqlalchemy import select

from backfiller.domain import RunState
from backfiller.storage.execution.common import ACTIVE, CHUNK, SessionRepository
from backfiller.storage.records import RunRecord


@dataclass(frozen=True, slots=True)
class ActiveRun:
    """The active run of one (job or asset, partition): what a slot of it waits for."""

    job_name: str
    partition_key: str
    run_id: int
    backfill_id: int
    status: RunState


class WaitsRepository(SessionRepository):
    async def active_runs(
        self,
        job_name: str,
        keys: Sequence[str] | None = None,
        *,
        other_than: int | None = None,
    ) -> dict[str, ActiveRun]:
        """The active run of ``job_name`` for each of ``keys`` that has one (every active run
        of the job when ``keys`` is None: at most as many as the limits let run), outside
        backfill ``other_than``. By partition key."""
        stmt = select(
            RunRecord.partition_key, RunRecord.id, RunRecord.backfill_id, RunRecord.status
        ).where(RunRecord.job_name == job_name, RunRecord.status.in_(ACTIVE))
        if other_than is not None:
            stmt = stmt.where(RunRecord.backfill_id != other_than)
        found: dict[str, ActiveRun] = {}
        chunks = (
            [None] if keys is None else [keys[i : i + CHUNK] for i in range(0, len(keys), CHUNK)]
        )
        for chunk in chunks:
            query = stmt if chunk is None else stmt.where(RunRecord.partition_key.in_(list(chunk)))
            for key, run_id, backfill_id, status in (await self.session.execute(query)).all():
                found[key] = ActiveRun(
                    job_name, key, int(run_id), int(backfill_id), RunState(status)
                )
        return found
