"""A stored backfill's selection, and the key space it is pinned to.

Shared by the launch service, the resolvers and the daemon so that all read a stored
selection, and a job's partition keys, the same way. (Storage only reads the rows: joining
them with a partitions definition is this layer's work.)
"""

from __future__ import annotations

from datetime import datetime

from backfiller.definitions.partitions import KeySpace, PartitionsDefinition, PartitionsKind
from backfiller.planning import Selection
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
