"""Reads of assets for the API: an asset's latest partition statuses, an asset backfill's slots
of one asset, and the slots a retry of it runs again."""

from __future__ import annotations

from collections.abc import Collection

from sqlalchemy import or_, select
from sqlalchemy.ext.asyncio import AsyncSession

from backfiller.domain import RunState, SkipReason, SlotState
from backfiller.storage.records import PartitionStateRecord, SlotRecord


class AssetReads:
    """Read-only; the caller owns the session."""

    def __init__(self, session: AsyncSession) -> None:
        self.session = session

    async def latest_statuses(
        self, asset: str, first: int, after: str | None
    ) -> list[tuple[str, RunState]]:
        """The latest status of the asset's partitions, by key: ``first`` of them after
        ``after`` (its runs are stored under the asset's name)."""
        stmt = (
            select(PartitionStateRecord.partition_key, PartitionStateRecord.status)
            .where(PartitionStateRecord.job_name == asset)
            .order_by(PartitionStateRecord.partition_key)
            .limit(first)
        )
        if after is not None:
            stmt = stmt.where(PartitionStateRecord.partition_key > after)
        rows = (await self.session.execute(stmt)).all()
        return [(key, RunState(status)) for key, status in rows]

    async def slot_statuses(
        self, backfill_id: int, low: str, high: str
    ) -> list[tuple[str, SlotState]]:
        """(slot key, status) of the backfill's planned slots whose keys are in ``[low, high)``
        (one asset's), in position order."""
        rows = (
            await self.session.execute(
                select(SlotRecord.partition_key, SlotRecord.status)
                .where(
                    SlotRecord.backfill_id == backfill_id,
                    SlotRecord.partition_key >= low,
                    SlotRecord.partition_key < high,
                )
                .order_by(SlotRecord.position)
            )
        ).all()
        return [(key, SlotState(status)) for key, status in rows]

    async def keys_to_retry(self, backfill_id: int, wanted: Collection[SlotState]) -> list[str]:
        """The slot keys in the ``wanted`` statuses, and those skipped because an upstream
        failed (``UPSTREAM_FAILED``): what a retry of an asset backfill runs again."""
        rows = await self.session.execute(
            select(SlotRecord.partition_key).where(
                SlotRecord.backfill_id == backfill_id,
                or_(
                    SlotRecord.status.in_(list(wanted)),
                    (SlotRecord.status == SlotState.SKIPPED)
                    & (SlotRecord.skip_reason == SkipReason.UPSTREAM_FAILED.value),
                ),
            )
        )
        return [str(key) for key in rows.scalars()]


__all__ = ["AssetReads"]
