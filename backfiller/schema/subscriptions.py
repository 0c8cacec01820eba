"""Public types pushed by subscriptions (over graphql-transport-ws)."""

from __future__ import annotations

import strawberry

from backfiller.schema.backfills import Backfill, BackfillCounts
from backfiller.schema.enums import BackfillStatus


@strawberry.type(
    description="A backfill's status and counts, pushed by `backfillProgress` each time they "
    "change."
)
class BackfillProgress:
    backfill_id: strawberry.ID
    status: BackfillStatus
    counts: BackfillCounts
    ended: bool = strawberry.field(
        description="True on the last message: the backfill reached a final status."
    )
    backfill: Backfill = strawberry.field(description="The whole backfill, as of this message.")
