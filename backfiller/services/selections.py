"""A stored backfill's selection, and the key space it is pinned to.

Shared by the launch service, the resolvers and the daemon so that all read a stored
selection, and a job's partition keys, the same way. (Storage only reads the rows: joining
them with a partitions definition is this layer's work.)
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from backfiller.definitions.jobs import JobDefinition
from backfiller.definitions.partitions import KeySpace, PartitionsDefinition, PartitionsKind
from backfiller.planning import ResolvedSelection, Selection, SelectionProblem, pin_stored_selection
from backfiller.storage.engine import Database
from backfiller.storage.records import BackfillRecord
from backfiller.storage.repositories import DynamicPartitionRepository


async def key_space_of(
    partitions: PartitionsDefinition, now: datetime, database: Database
) -> KeySpace:
    """The partition keys as of ``now``: computed, or read from the database when dynamic."""
    if partitions.kind is not PartitionsKind.DYNAMIC:
        return partitions.key_space(now)
    name = partitions.describe().dynamic_name
    assert name is not None
    async with database.read() as session:
        keys = await DynamicPartitionRepository(session).keys(name)
    return partitions.key_space(now, keys)


def stored_selection(record: BackfillRecord) -> Selection:
    """The selection of a backfill as it was requested."""
    return Selection(
        record.selection_kind,
        record.range_start,
        record.range_end,
        tuple(record.keys) if record.keys is not None else None,
    )


@dataclass(frozen=True, slots=True)
class Pinned:
    """A stored backfill's selection pinned to its job's key space."""

    space: KeySpace
    resolved: ResolvedSelection


@dataclass(frozen=True, slots=True)
class Unpinnable:
    """Why a stored backfill's selection no longer fits its job's keys."""

    message: str

    @property
    def reason(self) -> str:
        """The message as the backfill's error."""
        return f"the partitions of the backfill vanished: {self.message}"


async def pin_backfill(
    database: Database, job: JobDefinition, record: BackfillRecord, at: datetime
) -> Pinned | Unpinnable:
    """The backfill's selection pinned to the job's keys as of ``at``, or why it cannot be."""
    space = await key_space_of(job.partitions, at, database)
    try:
        resolved = pin_stored_selection(
            stored_selection(record), record.total, job.partitions, space
        )
    except SelectionProblem as problem:
        return Unpinnable(problem.message)
    return Pinned(space, resolved)


__all__ = ["Pinned", "Unpinnable", "key_space_of", "pin_backfill", "stored_selection"]
