"""``backfillProgress``: push a backfill's status and counts when they change.

The backfills row carries a ``version`` bumped by every change of status or counts, so watching
costs one primary-key read per interval, whatever the size of the backfill.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator

import strawberry

from backfiller.ids import parse_backfill_id
from backfiller.resolvers.context import Info, PublicError
from backfiller.resolvers.translate import backfill_from_row
from backfiller.schema.subscriptions import BackfillProgress
from backfiller.storage.backfill_reads import backfill_row

POLL_SECONDS = 0.5


async def backfill_progress(
    info: Info, id: strawberry.ID
) -> AsyncGenerator[BackfillProgress, None]:
    """Yield now, then on every change; end after the backfill reaches a final status."""
    pk = parse_backfill_id(id)
    if pk is None:
        raise PublicError(f"no backfill has id {id!r}", code="NOT_FOUND")
    seen: int | None = None
    while True:
        record = await info.context.database.query(lambda conn: backfill_row(conn, pk))
        if record is None:
            raise PublicError(f"no backfill has id {id!r}", code="NOT_FOUND")
        ended = record.status.is_terminal
        if record.version != seen:
            seen = record.version
            backfill = backfill_from_row(record)
            yield BackfillProgress(
                backfill_id=backfill.id,
                status=backfill.status,
                counts=backfill.counts,
                ended=ended,
                backfill=backfill,
            )
        if ended:
            return
        await asyncio.sleep(POLL_SECONDS)
