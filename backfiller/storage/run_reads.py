"""Reads of runs and their log lines, for the API: each one an index walk in id order."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sqlalchemy import or_, select, union_all
from sqlalchemy.ext.asyncio import AsyncSession

from backfiller.domain import RunState
from backfiller.storage.records import RunLogRecord, RunRecord


class RunReads:
    def __init__(self, session: AsyncSession) -> None:
        self.session = session

    async def get(self, pk: int) -> RunRecord | None:
        return await self.session.get(RunRecord, pk)

    async def page(
        self,
        limit: int,
        before_id: int | None,
        backfill_id: int | None = None,
        statuses: Sequence[RunState] | None = None,
        job_name: str | None = None,
        partition_key: str | None = None,
    ) -> list[RunRecord]:
        """Newest first. A ranged run is listed once (by its lead row), unless the runs of
        one partition are asked for: then the row of that partition.

        Each filter is an index walk in id order (``(backfill_id, status, id)``,
        ``(partition_key, job_name, id)``, ``(job_name, id)``, ``(status, id)``); several
        statuses are one walk per status, each stopped at ``limit``, then merged: a page
        reads about ``limit`` rows a status whatever the history."""
        wanted = list(dict.fromkeys(statuses or ()))
        filters = _run_filters(before_id, backfill_id, job_name, partition_key)
        stmt = select(RunRecord).order_by(RunRecord.id.desc()).limit(limit)
        if len(wanted) > 1:
            walks = [
                select(
                    select(RunRecord.id)
                    .where(*filters, RunRecord.status == status)
                    .order_by(RunRecord.id.desc())
                    .limit(limit)
                    .subquery()
                    .c.id
                )
                for status in wanted
            ]
            merged = union_all(*walks).subquery()
            stmt = stmt.where(RunRecord.id.in_(select(merged.c.id)))
        else:
            stmt = stmt.where(*filters, *(RunRecord.status == s for s in wanted))
        return list((await self.session.execute(stmt)).scalars())

    async def range_keys(self, lead_pk: int) -> list[str]:
        """The partitions of the ranged run led by ``lead_pk``, in key order (the lead's
        first, then its other rows in the order the claim inserted them)."""
        result = await self.session.execute(
            select(RunRecord.partition_key)
            .where(or_(RunRecord.id == lead_pk, RunRecord.lead_run_id == lead_pk))
            .order_by(RunRecord.id)
        )
        return [str(k) for k in result.scalars()]

    async def logs(self, run_id: int, limit: int, after_id: int | None) -> list[RunLogRecord]:
        stmt = (
            select(RunLogRecord)
            .where(
                RunLogRecord.run_id == run_id,
                # Its backfill's: on PostgreSQL, the one partition of the lines to read.
                RunLogRecord.backfill_id
                == select(RunRecord.backfill_id).where(RunRecord.id == run_id).scalar_subquery(),
            )
            .order_by(RunLogRecord.id)
            .limit(limit)
        )
        if after_id is not None:
            stmt = stmt.where(RunLogRecord.id > after_id)
        return list((await self.session.execute(stmt)).scalars())


def _run_filters(
    before_id: int | None,
    backfill_id: int | None,
    job_name: str | None,
    partition_key: str | None,
) -> list[Any]:
    """The conditions of ``RunReads.page`` but its statuses."""
    filters: list[Any] = []
    if partition_key is None:
        filters.append(RunRecord.lead_run_id.is_(None))
    else:
        filters.append(RunRecord.partition_key == partition_key)
    if backfill_id is not None:
        filters.append(RunRecord.backfill_id == backfill_id)
    if before_id is not None:
        filters.append(RunRecord.id < before_id)
    if job_name is not None:
        filters.append(RunRecord.job_name == job_name)
    return filters
