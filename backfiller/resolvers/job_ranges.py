"""A job's partitions as ranges of one status (``Job.partitionStatusRanges``), from the
latest outcome of each partition (``partition_states``), whatever the number of runs.

The database folds a job's states into islands of one status in key order
(``storage.partition_states.status_islands``): a few rows, where a job may have millions of
states. An island maps to a range of the key space when the space's keys are in the same
order (code-point order, as the database returns them) and the island holds as many states as
the space has keys from its first key to its last: then it is that whole range. When either
fails (the space is not in key order, or never-run partitions lie inside the island), the
island's states are read one by one and placed by their index (exact, at the cost of reading
them). One case escapes the count: a state whose key is no partition of the space (left by an
older definition) that sorts inside an island which also has a never-run partition inside it
makes the counts agree, and that partition is shown with the island's status.

A process keeps each job's islands with the job's version (``partition_states.job_versions``:
three index probes a job) and reads them again only when the version changed: the Jobs page of
a hundred idle jobs reads their versions, not their states.

One read for all the jobs a request asks about (the Jobs page asks for every job): the jobs
asked for in one turn of the event loop share one statement on one connection, and at most
:data:`CONCURRENT_READS` such statements run at once in a process, whatever the number of
requests, so these reads never take the connection pool from the others.
"""

from __future__ import annotations

import asyncio
import re
import weakref
from collections.abc import Callable, Iterable, Sequence
from functools import partial
from itertools import pairwise

from backfiller.definitions.partitions import KeySpace, PartitionsDefinition, PartitionsKind
from backfiller.domain import RunState
from backfiller.planning import FoldedRange
from backfiller.storage import Database
from backfiller.storage.partition_states import Island, cached_islands, states_between

CONCURRENT_READS = 2
"""Statements of these reads that one process runs at once."""

EXACT_ISLANDS = 32
"""Islands read state by state for one job, at most; past that, the job's states at once."""

_gates: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, asyncio.Semaphore] = (
    weakref.WeakKeyDictionary()
)


def read_gate() -> asyncio.Semaphore:
    """The process's (event loop's) gate of these reads."""
    loop = asyncio.get_running_loop()
    gate = _gates.get(loop)
    if gate is None:
        gate = _gates[loop] = asyncio.Semaphore(CONCURRENT_READS)
    return gate


class IslandsBatch:
    """Loads the islands of jobs, those asked for in one turn of the event loop together.
    One per request."""

    def __init__(self, database: Database) -> None:
        self.database = database
        self._pending: dict[str, asyncio.Future[list[Island]]] = {}
        self._flushing: set[asyncio.Task[None]] = set()

    async def load(self, job: str) -> list[Island]:
        future = self._pending.get(job)
        if future is None:
            loop = asyncio.get_running_loop()
            if not self._pending:
                loop.call_soon(self._start_flush, loop)
            future = self._pending[job] = loop.create_future()
        return await future

    def _start_flush(self, loop: asyncio.AbstractEventLoop) -> None:
        task = loop.create_task(self._flush())
        self._flushing.add(task)  # a task nobody holds may be collected before it ends
        task.add_done_callback(self._flushing.discard)

    async def _flush(self) -> None:
        batch, self._pending = self._pending, {}
        try:
            async with read_gate():
                found = await self.database.query(lambda conn: cached_islands(conn, list(batch)))
        except Exception as error:
            for future in batch.values():
                if not future.done():
                    future.set_exception(error)
            return
        for job, future in batch.items():
            if not future.done():
                future.set_result(found.get(job, []))


_BIG_ENDIAN = re.compile(
    r"^[^%]*%Y[^%]*(?:%m[^%]*)?(?:%d[^%]*)?(?:%H[^%]*)?(?:%M[^%]*)?(?:%S[^%]*)?$"
)
"""Formats whose keys sort as their times do: fixed-width numbers from the most significant
field down, between literals (a repeated hour's ``+HH:MM`` suffix sorts after its hour and
before the next)."""


def in_key_order(partitions: PartitionsDefinition, space: KeySpace) -> bool:
    """Whether the keys of ``space`` are in code-point order (Python's ``str`` order)."""
    if partitions.kind is PartitionsKind.TIME:
        fmt = partitions.describe().fmt
        return fmt is not None and bool(_BIG_ENDIAN.match(fmt))
    keys = space.keys(0, len(space))
    return all(a < b for a, b in pairwise(keys))


async def job_status_ranges(
    database: Database,
    job: str,
    partitions: PartitionsDefinition,
    space: KeySpace,
    islands: Sequence[Island],
    public: Callable[[RunState], str],
    unknown: str,
) -> list[FoldedRange]:
    """The job's ranges of one status over ``space``: each state's status as ``public``
    names it, ``unknown`` where there is no state."""
    ordered = in_key_order(partitions, space)
    segments: list[tuple[int, int, str]] = []
    loose: list[Island] = []
    for island in islands:
        placed = _placed(space, island) if ordered else None
        if placed is None:
            loose.append(island)
        else:
            segments.append((placed, island.size, public(island.status)))
    if loose:
        states = await _states_of(database, job, loose, whole=not ordered)
        for key, state in states:
            index = space.index_of(key)
            if index is not None:
                segments.append((index, 1, public(state)))
    return fold_segments(segments, len(space), unknown)


def _placed(space: KeySpace, island: Island) -> int | None:
    """The index of an island's first key when the island is a whole range of ``space``."""
    first = space.index_of(island.first_key)
    if first is None:
        return None
    last = first if island.size == 1 else space.index_of(island.last_key)
    if last is None or last - first + 1 != island.size:
        return None
    return first


async def _states_of(
    database: Database, job: str, islands: list[Island], *, whole: bool
) -> list[tuple[str, RunState]]:
    """The states of ``islands`` (of all the job's states when ``whole`` or many islands)."""
    if whole or len(islands) > EXACT_ISLANDS:
        async with read_gate():
            return await database.query(partial(states_between, job=job))
    states: list[tuple[str, RunState]] = []
    async with read_gate():
        for island in islands:
            read = partial(states_between, job=job, first_key=island.first_key)
            states += await database.query(partial(read, last_key=island.last_key))
    return states


def fold_segments(
    segments: Iterable[tuple[int, int, str]], total: int, unknown: str
) -> list[FoldedRange]:
    """``(start, count, status)`` segments, in any order and not overlapping, folded into
    ranges of one status over ``[0, total)``; positions in no segment take ``unknown``."""
    ranges: list[FoldedRange] = []
    cursor = 0

    def push(status: str, start: int, count: int) -> None:
        if count <= 0:
            return
        if ranges and ranges[-1].status == status and ranges[-1].start + ranges[-1].count == start:
            last = ranges.pop()
            ranges.append(FoldedRange(status, last.start, last.count + count))
        else:
            ranges.append(FoldedRange(status, start, count))

    for start, count, status in sorted(segments):
        if start >= total:
            break
        push(unknown, cursor, start - cursor)
        push(status, start, min(count, total - start))
        cursor = start + count
    push(unknown, cursor, total - cursor)
    return ranges


__all__ = ["IslandsBatch", "fold_segments", "in_key_order", "job_status_ranges"]
