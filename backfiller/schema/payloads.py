"""Mutation payloads: the result, and expected failures as `userErrors`."""

from __future__ import annotations

import strawberry

from backfiller.schema.backfills import Backfill, BackfillPreview
from backfiller.schema.common import UserError


@strawberry.type
class LaunchBackfillPayload:
    backfill: Backfill | None
    user_errors: list[UserError]


@strawberry.type
class PreviewBackfillPayload:
    preview: BackfillPreview | None
    user_errors: list[UserError]


@strawberry.type
class PauseBackfillPayload:
    backfill: Backfill | None
    user_errors: list[UserError]


@strawberry.type
class UpdateBackfillPayload:
    backfill: Backfill | None
    user_errors: list[UserError]


@strawberry.type
class ResumeBackfillPayload:
    backfill: Backfill | None
    user_errors: list[UserError]


@strawberry.type
class CancelBackfillPayload:
    backfill: Backfill | None
    user_errors: list[UserError]


@strawberry.type
class RetryBackfillPayload:
    backfill: Backfill | None = strawberry.field(
        description="The new backfill, child of the retried one."
    )
    user_errors: list[UserError]


@strawberry.type
class DynamicPartitionsPayload:
    name: str
    keys_changed: int = strawberry.field(description="Keys actually added or deleted.")
    user_errors: list[UserError]
