"""The record of partitions marked by hand (``markPartitions``): one row a partition a mark.

A mark's effect lives in ``partition_states`` (the partition's latest state, as a run's end
would set it, with no run); this table is its history: who marked what, as what, and why. It
is never pruned, like ``partition_states``.
"""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import Index, String, Text
from sqlalchemy.orm import Mapped, mapped_column

from backfiller.domain import MarkStatus
from backfiller.storage.base import Base, BigId


class PartitionMarkRecord(Base):
    """One partition of a job (or asset) recorded as SUCCEEDED or SKIPPED without a run."""

    __tablename__ = "partition_marks"

    id: Mapped[int] = mapped_column(BigId, primary_key=True, autoincrement=True)
    # The job's name, or the asset's (its runs are runs of a job of its name).
    job_name: Mapped[str] = mapped_column(String(200))
    partition_key: Mapped[str] = mapped_column(String(200))
    status: Mapped[MarkStatus]
    reason: Mapped[str] = mapped_column(Text)
    actor: Mapped[str | None] = mapped_column(String(200))
    marked_at: Mapped[datetime]

    __table_args__ = (
        # A job's marks newest first, and its newest mark (the job's version, see
        # ``storage.partition_states.job_versions``); a partition's marks newest first.
        Index("ix_partition_marks_job_name_id", "job_name", "id"),
        Index("ix_partition_marks_job_name_partition_key_id", "job_name", "partition_key", "id"),
    )


__all__ = ["PartitionMarkRecord"]
