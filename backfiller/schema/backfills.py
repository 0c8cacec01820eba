"""Public types of backfills and runs.

These types never hold a storage record. Fields that need more data ask
``info.context.source`` (a :class:`~backfiller.schema.source.Source`), which the resolvers
layer implements.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Annotated, Any

import strawberry

from backfiller.schema.assets import AssetSelection
from backfiller.schema.common import JSON, Node, PageInfo, Tag
from backfiller.schema.enums import (
    BackfillEventKind,
    BackfillOrder,
    BackfillStatus,
    PartitionStatus,
    Reprocess,
    RunFailureReason,
    RunStatus,
    SkipReason,
)
from backfiller.schema.notifications import NotificationConnection

if TYPE_CHECKING:
    from backfiller.schema.asset_backfills import AssetPreview, BackfillAsset
    from backfiller.schema.source import Source
    from backfiller.schema.timeline import RunTimeline

MAX_PAGE = 100


def source_of(info: strawberry.Info[Any, Any]) -> Source:
    source: Source = info.context.source
    return source


@strawberry.type(description="What a backfill runs.")
class BackfillTarget:
    job: str | None = strawberry.field(description="The job's name, for a job backfill.")
    assets: AssetSelection | None = strawberry.field(
        default=None, description="The assets, for an asset backfill."
    )


@strawberry.type
class PartitionRange:
    start: str
    end: str


@strawberry.type(description="The partitions of a backfill, as they were requested.")
class PartitionSelection:
    range: PartitionRange | None = None
    keys: Sequence[str] | None = None
    all: bool = False


@strawberry.type(
    description="How many partitions of a backfill are in each status. The seven status counts "
    "always add up to `total`."
)
class BackfillCounts:
    total: int
    pending: int
    queued: int
    running: int
    succeeded: int
    failed: int
    canceled: int
    skipped: int

    # Plain fields computed once by ``of``, not resolvers: a field with a resolver costs
    # strawberry an Info object and argument handling on every read (a page of 100
    # backfills reads these 200 times).
    done: int = strawberry.field(
        description="Partitions in a final status (succeeded, failed, canceled, skipped)."
    )
    percent_done: float = strawberry.field(
        description="`done` / `total` as a percentage, 0 to 100."
    )

    @classmethod
    def of(
        cls,
        *,
        total: int,
        pending: int,
        queued: int,
        running: int,
        succeeded: int,
        failed: int,
        canceled: int,
        skipped: int,
    ) -> BackfillCounts:
        """The counts, with ``done`` and ``percentDone`` derived from them."""
        done = succeeded + failed + canceled + skipped
        percent = 100.0 if total == 0 else float(round(100.0 * done / total, 2))
        return cls(
            total=total,
            pending=pending,
            queued=queued,
            running=running,
            succeeded=succeeded,
            failed=failed,
            canceled=canceled,
            skipped=skipped,
            done=done,
            percent_done=percent,
        )


@strawberry.type(description="Consecutive partitions of a backfill that share one status.")
class PartitionStatusRange:
    status: PartitionStatus
    start_key: str
    end_key: str
    start_index: int = strawberry.field(
        description="Position of `startKey` in the backfill's launch order, from 0."
    )
    count: int


@strawberry.type(
    description="A run of the same job (or asset) and partition, QUEUED or RUNNING in another "
    "backfill. One partition runs at most once at a time, so a partition of this backfill "
    "waits for it: it then runs (under `reprocess: MISSING`, it is skipped if that run "
    "succeeded)."
)
class PartitionWait:
    run_id: strawberry.ID = strawberry.field(description="The run waited for.")
    run_status: RunStatus = strawberry.field(description="QUEUED or RUNNING.")
    backfill_id: strawberry.ID = strawberry.field(description="The backfill of that run.")
    _backfill_pk: strawberry.Private[int]

    @strawberry.field(description="The backfill of that run.")
    async def backfill(self, info: strawberry.Info[Any, Any]) -> Backfill | None:
        return await source_of(info).backfill(self._backfill_pk)


@strawberry.type(description="A partition that would wait for another backfill's run.")
class WaitingPartition:
    key: str
    waiting_for: PartitionWait


@strawberry.type(description="One partition of a backfill and its latest status there.")
class BackfillPartition:
    key: str
    index: int = strawberry.field(description="Position in the backfill's launch order.")
    status: PartitionStatus
    attempts: int
    skip_reason: SkipReason | None
    waiting_for: PartitionWait | None = strawberry.field(
        default=None,
        description="While the partition is PENDING because another backfill runs the same "
        "job (or asset) and partition: the run it waits for. Null otherwise.",
    )


@strawberry.type
class BackfillPartitionEdge:
    cursor: str
    node: BackfillPartition


@strawberry.type
class BackfillPartitionConnection:
    edges: list[BackfillPartitionEdge]
    page_info: PageInfo

    @strawberry.field
    def nodes(self) -> list[BackfillPartition]:
        return [e.node for e in self.edges]


@strawberry.type(description="Something that happened to a backfill, with who made it happen.")
class BackfillEvent:
    kind: BackfillEventKind
    at: datetime
    actor: str | None
    message: str | None


@strawberry.type
class BackfillEventEdge:
    cursor: str
    node: BackfillEvent


@strawberry.type
class BackfillEventConnection:
    edges: list[BackfillEventEdge]
    page_info: PageInfo

    @strawberry.field
    def nodes(self) -> list[BackfillEvent]:
        return [e.node for e in self.edges]


@strawberry.type(description="A line a run logged.")
class RunLogLine:
    at: datetime
    level: str
    message: str


@strawberry.type
class RunLogEdge:
    cursor: str
    node: RunLogLine


@strawberry.type
class RunLogConnection:
    edges: list[RunLogEdge]
    page_info: PageInfo

    @strawberry.field
    def nodes(self) -> list[RunLogLine]:
        return [e.node for e in self.edges]


@strawberry.type(description="The worker process a run executed in.")
class RunWorker:
    host: str = strawberry.field(description="The worker's host name.")
    pid: int | None = strawberry.field(description="The worker process's id on that host.")


@strawberry.type(description="One attempt to run a job for one partition.")
class Run(Node):
    id: strawberry.ID
    job: str
    partition_key: str
    attempt: int = strawberry.field(description="1 for the first attempt.")
    status: RunStatus
    failure_reason: RunFailureReason | None
    error_message: str | None = strawberry.field(
        description="The exception's type and message. The traceback stays on the server."
    )
    queued_at: datetime
    started_at: datetime | None
    ended_at: datetime | None
    backfill_id: strawberry.ID
    worker: RunWorker | None = strawberry.field(
        description="Where the run executed: a process of the daemon's local pool, or a "
        "Celery worker's process. Null until the run starts."
    )
    _pk: strawberry.Private[int]
    _backfill_pk: strawberry.Private[int]
    _lead_pk: strawberry.Private[int | None] = None
    """The ranged run this row belongs to (its own pk when it leads one); None otherwise."""
    _range_size: strawberry.Private[int | None] = None
    """A ranged run's size when this row leads it (known without a read)."""

    @strawberry.field(
        description="Every partition this run covers, in key order: `[partitionKey]` for a "
        "run of one partition, the whole range for a ranged run (a job with a backfill "
        "policy), whose `partitionKey` is its first key. Counts and partition statuses stay "
        "per partition."
    )
    async def partition_keys(self, info: strawberry.Info[Any, Any]) -> list[str]:
        if self._lead_pk is None:
            return [self.partition_key]
        return await source_of(info).run_partition_keys(self._lead_pk)

    @strawberry.field(description="How many partitions this run covers (1 unless ranged).")
    async def partition_count(self, info: strawberry.Info[Any, Any]) -> int:
        if self._lead_pk is None:
            return 1
        if self._range_size is not None:
            return self._range_size
        return len(await source_of(info).run_partition_keys(self._lead_pk))

    @strawberry.field(description="The asset this run materializes; null for a job's run.")
    def asset(self, info: strawberry.Info[Any, Any]) -> str | None:
        from backfiller.schema.asset_backfills import asset_reads_of

        return self.job if asset_reads_of(info).is_asset(self.job) else None

    @strawberry.field(description="Seconds from start to end (or to now while running).")
    def duration_seconds(self) -> float | None:
        if self.started_at is None:
            return None
        from datetime import UTC

        end = self.ended_at or datetime.now(UTC)
        return round((end - self.started_at).total_seconds(), 3)

    @strawberry.field
    async def backfill(self, info: strawberry.Info[Any, Any]) -> Backfill:
        found = await source_of(info).backfill(self._backfill_pk)
        assert found is not None
        return found

    @strawberry.field(description="The run's log lines, oldest first.")
    async def logs(
        self, info: strawberry.Info[Any, Any], first: int = 100, after: str | None = None
    ) -> RunLogConnection:
        # A ranged run's lines are kept on the run that leads it.
        return await source_of(info).run_logs(self._lead_pk or self._pk, first, after)


@strawberry.type
class RunEdge:
    cursor: str
    node: Run


@strawberry.type
class RunConnection:
    edges: list[RunEdge]
    page_info: PageInfo

    @strawberry.field
    def nodes(self) -> list[Run]:
        return [e.node for e in self.edges]


@strawberry.type(description="A request to run a target over partitions, and its progress.")
class Backfill(Node):
    id: strawberry.ID
    title: str | None
    description: str | None
    target: BackfillTarget
    partition_selection: PartitionSelection
    status: BackfillStatus
    error: str | None = strawberry.field(description="Why the backfill FAILED, if it did.")
    reprocess: Reprocess
    order: BackfillOrder
    max_concurrent_runs: int | None
    run_config: JSON | None
    tags: Sequence[Tag]
    creator: str | None = strawberry.field(
        description="Who launched it: a token's name, a run, a trigger, or null without auth."
    )
    team: str | None = strawberry.field(
        description="The team it acts for: its launcher's (a token's, a signed-in person's or "
        "a trigger's); null for none. The daemon shares room fairly between teams."
    )
    priority: int = strawberry.field(
        description="Higher priorities are claimed first and get a bigger share of the room; "
        "a lower one still progresses (docs/execution.md). 0 by default."
    )
    created_at: datetime
    started_at: datetime | None
    ended_at: datetime | None
    updated_at: datetime
    counts: BackfillCounts
    _pk: strawberry.Private[int]
    _parent_pk: strawberry.Private[int | None]

    @strawberry.field(description="The backfill this one retries, if any.")
    async def parent(self, info: strawberry.Info[Any, Any]) -> Backfill | None:
        if self._parent_pk is None:
            return None
        return await source_of(info).backfill(self._parent_pk)

    @strawberry.field(description="Backfills launched by `retryBackfill` from this one.")
    async def retries(self, info: strawberry.Info[Any, Any]) -> list[Backfill]:
        return await source_of(info).backfill_retries(self._pk)

    @strawberry.field(description="Runs of this backfill, newest first.")
    async def runs(
        self,
        info: strawberry.Info[Any, Any],
        first: int = 50,
        after: str | None = None,
        statuses: list[RunStatus] | None = None,
    ) -> RunConnection:
        return await source_of(info).backfill_runs(self._pk, first, after, statuses)

    @strawberry.field(
        description="Each partition with its status in this backfill, in launch order."
    )
    async def partitions(
        self,
        info: strawberry.Info[Any, Any],
        first: int = 100,
        after: str | None = None,
        statuses: list[PartitionStatus] | None = None,
    ) -> BackfillPartitionConnection:
        return await source_of(info).backfill_partitions(self._pk, first, after, statuses)

    @strawberry.field(
        description="Partitions folded into ranges of one status, in launch order: a "
        "100,000-partition backfill is drawn from one small answer."
    )
    async def partition_status_ranges(
        self, info: strawberry.Info[Any, Any]
    ) -> list[PartitionStatusRange]:
        return await source_of(info).backfill_partition_status_ranges(self._pk)

    @strawberry.field(
        description="Its status, counts, partition status ranges and newest runs (at most "
        "`lastRuns`, up to 20,000), read together in one snapshot of the database: the "
        "material of a timeline whose numbers agree with each other."
    )
    async def timeline(
        self, info: strawberry.Info[Any, Any], last_runs: int = 10_000
    ) -> Annotated[RunTimeline, strawberry.lazy("backfiller.schema.timeline")]:
        return await source_of(info).backfill_timeline(self._pk, last_runs)

    @strawberry.field(
        description="Per asset of an asset backfill, in dependency order: its level, counts "
        "and partition status ranges. Empty for a job backfill."
    )
    async def assets(
        self, info: strawberry.Info[Any, Any]
    ) -> list[Annotated[BackfillAsset, strawberry.lazy("backfiller.schema.asset_backfills")]]:
        from backfiller.schema.asset_backfills import asset_reads_of

        return await asset_reads_of(info).backfill_assets(self._pk)

    @strawberry.field(
        description="What happened to this backfill, oldest first (newest first with "
        "`newestFirst`)."
    )
    async def events(
        self,
        info: strawberry.Info[Any, Any],
        first: int = 100,
        after: str | None = None,
        newest_first: bool = False,
    ) -> BackfillEventConnection:
        return await source_of(info).backfill_events(self._pk, first, after, newest_first)

    @strawberry.field(
        description="Webhook notifications of this backfill's events and their deliveries, "
        "oldest first."
    )
    async def notifications(
        self, info: strawberry.Info[Any, Any], first: int = 50, after: str | None = None
    ) -> NotificationConnection:
        return await source_of(info).backfill_notifications(self._pk, first, after)


@strawberry.type
class BackfillEdge:
    cursor: str
    node: Backfill


@strawberry.type
class BackfillConnection:
    edges: list[BackfillEdge]
    page_info: PageInfo

    @strawberry.field
    def nodes(self) -> list[Backfill]:
        return [e.node for e in self.edges]


@strawberry.type(description="A partition that a backfill would skip, and why.")
class SkippedPartition:
    key: str
    reason: SkipReason


@strawberry.type(description="What launching a backfill would do. Nothing was written.")
class BackfillPreview:
    job: str = strawberry.field(
        description="The job previewed; for an asset target (no single job), `@assets`: see "
        "`assets`."
    )
    total: int = strawberry.field(description="Partitions in the selection.")
    runs: int = strawberry.field(description="Partitions that would run (total - skipped).")
    skipped: int
    first_partitions: list[str] = strawberry.field(
        description="The first partitions that would run, in launch order (at most 20)."
    )
    skipped_partitions: list[SkippedPartition] = strawberry.field(
        description="The first skipped partitions with their reason (at most 20)."
    )
    waiting: int = strawberry.field(
        default=0,
        description="Of `runs`, partitions that another backfill is running now (a QUEUED or "
        "RUNNING run of the same job or asset and partition): each would wait for that run to end, "
        "then run (under `reprocess: MISSING`, be skipped if that run succeeded).",
    )
    waiting_partitions: list[WaitingPartition] = strawberry.field(
        default_factory=list,
        description="The first partitions that would wait, with the run each would wait for "
        "(at most 20; a job's in launch order, an asset backfill's asset by asset).",
    )
    assets: (
        list[Annotated[AssetPreview, strawberry.lazy("backfiller.schema.asset_backfills")]] | None
    ) = strawberry.field(
        default=None,
        description="Per asset of an asset backfill, in dependency order; null for a job.",
    )
    ranged_runs: int | None = strawberry.field(
        default=None,
        description="For a job with a backfill policy, how many runs the `runs` partitions "
        "form (chunks of consecutive partitions; a skipped partition splits a chunk); for an "
        "asset backfill with such an asset, the runs of all its assets; null for one run per "
        "partition.",
    )
