"""What the public types need from the layer below, as a protocol.

The resolvers layer implements :class:`Source` and puts it in the request context as
``context.source``; the schema package never learns how data is stored.
"""

from __future__ import annotations

from typing import Protocol

from backfiller.schema.backfills import (
    Backfill,
    BackfillEventConnection,
    BackfillPartitionConnection,
    PartitionStatusRange,
    RunConnection,
    RunLogConnection,
)
from backfiller.schema.enums import PartitionStatus, RunStatus
from backfiller.schema.jobs import PartitionKeyConnection
from backfiller.schema.notifications import NotificationConnection
from backfiller.schema.timeline import RunTimeline


class Source(Protocol):
    async def backfill(self, pk: int) -> Backfill | None: ...

    async def backfill_retries(self, pk: int) -> list[Backfill]: ...

    async def backfill_runs(
        self, pk: int, first: int, after: str | None, statuses: list[RunStatus] | None
    ) -> RunConnection: ...

    async def backfill_partitions(
        self, pk: int, first: int, after: str | None, statuses: list[PartitionStatus] | None
    ) -> BackfillPartitionConnection: ...

    async def backfill_partition_status_ranges(self, pk: int) -> list[PartitionStatusRange]: ...

    async def backfill_timeline(self, pk: int, last_runs: int) -> RunTimeline: ...

    async def backfill_events(
        self, pk: int, first: int, after: str | None, newest_first: bool = False
    ) -> BackfillEventConnection: ...

    async def backfill_notifications(
        self, pk: int, first: int, after: str | None
    ) -> NotificationConnection: ...

    async def run_logs(self, pk: int, first: int, after: str | None) -> RunLogConnection: ...

    async def run_partition_keys(self, lead_pk: int) -> list[str]: ...

    async def job_partition_count(self, job: str) -> int: ...

    async def job_partition_keys(
        self, job: str, first: int, after: str | None
    ) -> PartitionKeyConnection: ...

    async def job_partition_status_ranges(self, job: str) -> list[PartitionStatusRange]: ...
