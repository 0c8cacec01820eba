"""The storage-backed implementation of :class:`backfiller.schema.source.Source`."""

from __future__ import annotations

from typing import TYPE_CHECKING

from backfiller import domain
from backfiller.definitions.jobs import JobDefinition
from backfiller.definitions.partitions import KeySpace
from backfiller.ids import encode_cursor
from backfiller.planning import (
    FoldedRange,
    key_at,
    keys_between,
)
from backfiller.resolvers.assets import asset_status_ranges
from backfiller.resolvers.context import PublicError
from backfiller.resolvers.job_ranges import IslandsBatch, job_status_ranges
from backfiller.resolvers.notifications import notifications_page
from backfiller.resolvers.pages import cursor_value, page_info
from backfiller.resolvers.translate import (
    backfill_from_record,
    backfill_from_row,
    event_kind,
    partition_status,
    partition_status_of_run,
    run_from_record,
    run_state,
    skip_reason,
    slot_state,
)
from backfiller.resolvers.waits import mark_waits
from backfiller.schema.backfills import (
    Backfill,
    BackfillEvent,
    BackfillEventConnection,
    BackfillEventEdge,
    BackfillPartition,
    BackfillPartitionConnection,
    BackfillPartitionEdge,
    PartitionStatusRange,
    RunConnection,
    RunEdge,
    RunLogConnection,
    RunLogEdge,
    RunLogLine,
)
from backfiller.schema.enums import PartitionStatus, RunStatus
from backfiller.schema.jobs import PartitionKeyConnection, PartitionKeyEdge
from backfiller.schema.notifications import NotificationConnection
from backfiller.schema.timeline import RunTimeline
from backfiller.services.selections import Pinned, key_space_of
from backfiller.storage.backfill_reads import BackfillRow, backfill_row, backfill_rows
from backfiller.storage.log_store import LogLine
from backfiller.storage.records import BackfillRecord
from backfiller.storage.repositories import (
    BackfillQuery,
    BackfillRepository,
    EventRepository,
    RunReads,
    SlotReads,
)

if TYPE_CHECKING:
    from backfiller.resolvers.context import Services


class StorageSource:
    """Loads what public types ask for. One per request."""

    def __init__(self, services: Services) -> None:
        self.services = services
        self._islands = IslandsBatch(services.database)

    @property
    def database(self):  # type: ignore[no-untyped-def]
        return self.services.database

    def _limit(self, first: int) -> int:
        if first < 0 or first > self.services.settings.max_page_size:
            raise PublicError(
                f"`first` must be between 0 and {self.services.settings.max_page_size}"
            )
        return first

    async def backfill(self, pk: int) -> Backfill | None:
        row = await self.services.database.query(lambda conn: backfill_row(conn, pk))
        return backfill_from_row(row) if row else None

    async def backfill_page(
        self, query: BackfillQuery, limit: int, before_id: int | None
    ) -> list[BackfillRow]:
        """Up to ``limit`` backfills, newest first, below ``before_id`` (rows, not records)."""
        return await self.services.database.query(
            lambda conn: backfill_rows(conn, query, limit, before_id)
        )

    async def backfill_retries(self, pk: int) -> list[Backfill]:
        async with self.database.read() as session:
            records = await BackfillRepository(session).children(pk)
        return [backfill_from_record(r) for r in records]

    async def backfill_runs(
        self, pk: int, first: int, after: str | None, statuses: list[RunStatus] | None
    ) -> RunConnection:
        limit = self._limit(first)
        before = cursor_value("run", after)
        async with self.database.read() as session:
            records = await RunReads(session).page(
                limit + 1,
                before,
                backfill_id=pk,
                statuses=[run_state(s) for s in statuses] if statuses else None,
            )
        edges = [
            RunEdge(cursor=encode_cursor("run", r.id), node=run_from_record(r))
            for r in records[:limit]
        ]
        return RunConnection(
            edges=edges,
            page_info=page_info(edges, len(records) > limit, after),
        )

    async def _pinned(self, record: BackfillRecord) -> Pinned | None:
        if record.kind is not domain.BackfillKind.JOB:
            return None
        pinned = await self.services.pins.pin(self.database, self.services.definitions, record)
        return pinned if isinstance(pinned, Pinned) else None

    @staticmethod
    def _unplanned_status(record: BackfillRecord) -> domain.SlotState:
        if record.status is domain.BackfillState.CANCELED:
            return domain.SlotState.CANCELED
        return domain.SlotState.PENDING

    async def backfill_partitions(
        self, pk: int, first: int, after: str | None, statuses: list[PartitionStatus] | None
    ) -> BackfillPartitionConnection:
        limit = self._limit(first)
        after_position = cursor_value("pos", after)
        start = -1 if after_position is None else after_position
        wanted = {slot_state(s) for s in statuses} if statuses else None
        async with self.database.read() as session:
            record = await BackfillRepository(session).get(pk)
            if record is None:
                return BackfillPartitionConnection(edges=[], page_info=page_info([], False, after))
            slots = await SlotReads(session).page(
                pk, start, limit + 1, list(wanted) if wanted else None
            )
        pinned = await self._pinned(record)
        found: list[BackfillPartition] = [
            BackfillPartition(
                key=s.partition_key,
                index=s.position,
                status=partition_status(s.status),
                attempts=s.attempts,
                skip_reason=skip_reason(domain.SkipReason(s.skip_reason))
                if s.skip_reason
                else None,
            )
            for s in slots
        ]
        unplanned = self._unplanned_status(record)
        if len(found) <= limit and pinned is not None and (wanted is None or unplanned in wanted):
            space, resolved = pinned.space, pinned.resolved
            begin = max(record.planned, start + 1)
            need = limit + 1 - len(found)
            keys = keys_between(resolved, record.order, space, begin, begin + need)
            found += [
                BackfillPartition(
                    key=k,
                    index=begin + i,
                    status=partition_status(unplanned),
                    attempts=0,
                    skip_reason=None,
                )
                for i, k in enumerate(keys)
            ]
        page = found[:limit]
        await mark_waits(self.database, record, page)
        edges = [BackfillPartitionEdge(cursor=encode_cursor("pos", p.index), node=p) for p in page]
        return BackfillPartitionConnection(
            edges=edges,
            page_info=page_info(edges, len(found) > limit, after),
        )

    async def backfill_partition_status_ranges(self, pk: int) -> list[PartitionStatusRange]:
        """Ranges of one status, from the slots' status changes (an index walk, not a scan),
        cached per backfill version: a finished backfill is answered from memory."""
        async with self.database.read() as session:
            record = await BackfillRepository(session).get(pk)
            if record is None:
                return []
            if record.asset_target is not None:  # positions interleave assets: per asset
                return await asset_status_ranges(self.services, pk)
            cache_key = (pk, record.version, record.planned)
            cached = self.services.status_ranges.get(cache_key)
            if cached is not None:
                return list(cached)
            changes = await SlotReads(session).status_changes(pk) if record.planned else []
        ranges = await self.fold_status_ranges(record, changes)
        self.services.status_ranges[cache_key] = ranges
        return list(ranges)

    async def fold_status_ranges(
        self, record: BackfillRecord, changes: list[tuple[int, domain.SlotState]]
    ) -> list[PartitionStatusRange]:
        """The status ranges of a job backfill from its slots' status changes, read with it."""
        folded: list[FoldedRange] = []
        for i, (position, state) in enumerate(changes):
            stop = changes[i + 1][0] if i + 1 < len(changes) else record.planned
            folded.append(FoldedRange(state.value, position, stop - position))
        if record.planned < record.total:
            unplanned = self._unplanned_status(record).value
            if folded and folded[-1].status == unplanned:
                last = folded.pop()
                folded.append(FoldedRange(unplanned, last.start, record.total - last.start))
            else:
                folded.append(FoldedRange(unplanned, record.planned, record.total - record.planned))
        pinned = await self._pinned(record)
        ranges: list[PartitionStatusRange] = []
        for r in folded:
            if pinned is not None:
                space, resolved = pinned.space, pinned.resolved
                start_key = key_at(resolved, record.order, space, r.start)
                end_key = key_at(resolved, record.order, space, r.start + r.count - 1)
            else:
                start_key = end_key = ""
            ranges.append(
                PartitionStatusRange(
                    status=partition_status(domain.SlotState(r.status)),
                    start_key=start_key,
                    end_key=end_key,
                    start_index=r.start,
                    count=r.count,
                )
            )
        return ranges

    async def backfill_timeline(self, pk: int, last_runs: int) -> RunTimeline:
        from backfiller.resolvers.timeline import read_timeline

        return await read_timeline(self, pk, last_runs)

    async def backfill_events(
        self, pk: int, first: int, after: str | None, newest_first: bool = False
    ) -> BackfillEventConnection:
        limit = self._limit(first)
        after_id = cursor_value("ev", after)
        async with self.database.read() as session:
            records = await EventRepository(session).page(
                pk, limit + 1, after_id, newest_first=newest_first
            )
        edges = [
            BackfillEventEdge(
                cursor=encode_cursor("ev", r.id),
                node=BackfillEvent(
                    kind=event_kind(domain.EventKind(r.kind)),
                    at=r.at,
                    actor=r.actor,
                    message=r.message,
                ),
            )
            for r in records[:limit]
        ]
        return BackfillEventConnection(
            edges=edges,
            page_info=page_info(edges, len(records) > limit, after),
        )

    async def backfill_notifications(
        self, pk: int, first: int, after: str | None
    ) -> NotificationConnection:
        return await notifications_page(self.database, pk, self._limit(first), after)

    async def run_partition_keys(self, lead_pk: int) -> list[str]:
        async with self.database.read() as session:
            return await RunReads(session).range_keys(lead_pk)

    async def run_logs(self, pk: int, first: int, after: str | None) -> RunLogConnection:
        limit = self._limit(first)
        after_id = cursor_value("log", after)
        store = self.database.log_store
        if not store.in_database:  # files: the cursor counts the run's lines before it
            lines = await self._logs_in_files(pk, limit + 1, after_id or 0)
            found = [
                (ln.position, RunLogLine(at=ln.at, level=ln.level, message=ln.message))
                for ln in lines
            ]
        else:
            async with self.database.read() as session:
                records = await RunReads(session).logs(pk, limit + 1, after_id)
            found = [(r.id, RunLogLine(at=r.at, level=r.level, message=r.message)) for r in records]
        edges = [
            RunLogEdge(cursor=encode_cursor("log", position), node=line)
            for position, line in found[:limit]
        ]
        return RunLogConnection(
            edges=edges,
            page_info=page_info(edges, len(found) > limit, after),
        )

    async def _logs_in_files(self, pk: int, limit: int, after: int) -> list[LogLine]:
        async with self.database.read() as session:
            run = await RunReads(session).get(pk)
        if run is None:
            return []
        return await self.services.database.log_store.read(run.backfill_id, pk, limit, after)

    async def _job_space(self, job_name: str) -> tuple[JobDefinition, KeySpace] | None:
        job = self.services.definitions.get_runnable(job_name)  # a job, or an asset's run
        if job is None:
            return None
        space = await key_space_of(job.partitions, self.services.clock(), self.database)
        return job, space

    async def job_partition_count(self, job: str) -> int:
        found = await self._job_space(job)
        return len(found[1]) if found else 0

    async def job_partition_keys(
        self, job: str, first: int, after: str | None
    ) -> PartitionKeyConnection:
        limit = self._limit(first)
        after_index = cursor_value("key", after)
        found = await self._job_space(job)
        if found is None:
            return PartitionKeyConnection(
                edges=[], page_info=page_info([], False, after), total_count=0
            )
        _job, space = found
        start = 0 if after_index is None else after_index + 1
        keys = space.keys(start, start + limit + 1)
        edges = [
            PartitionKeyEdge(cursor=encode_cursor("key", start + i), node=k)
            for i, k in enumerate(keys[:limit])
        ]
        return PartitionKeyConnection(
            edges=edges,
            page_info=page_info(edges, len(keys) > limit, after),
            total_count=len(space),
        )

    async def job_partition_status_ranges(self, job: str) -> list[PartitionStatusRange]:
        """From the job's islands of one status (``resolvers.job_ranges``): one statement for
        all the jobs of the request, a few rows each."""
        found = await self._job_space(job)
        if found is None:
            return []
        definition, space = found
        islands = await self._islands.load(job)
        folded = await job_status_ranges(
            self.database,
            job,
            definition.partitions,
            space,
            islands,
            lambda state: partition_status_of_run(state).value,
            PartitionStatus.PENDING.value,
        )
        return [
            PartitionStatusRange(
                status=PartitionStatus(r.status),
                start_key=space.key_at(r.start),
                end_key=space.key_at(r.start + r.count - 1),
                start_index=r.start,
                count=r.count,
            )
            for r in folded
        ]
