"""Public inputs: narrow by design. Resolvers translate them into private commands."""

from __future__ import annotations

from datetime import datetime

import strawberry

from backfiller.schema.assets import AssetSelectionInput
from backfiller.schema.common import JSON, TagInput
from backfiller.schema.enums import BackfillOrder, BackfillStatus, Reprocess, RetryInclude
from backfiller.schema.notifications import NotifyInput


@strawberry.input(one_of=True, description="What a backfill runs. Exactly one field.")
class BackfillTargetInput:
    job: str | None = strawberry.UNSET
    assets: AssetSelectionInput | None = strawberry.UNSET


@strawberry.input(description="Partitions from `start` to `end`, both included.")
class PartitionRangeInput:
    start: str = strawberry.field(description="The first partition key.")
    end: str = strawberry.field(description="The last partition key (included).")


@strawberry.input(one_of=True, description="Which partitions a backfill covers. Exactly one field.")
class PartitionSelectionInput:
    range: PartitionRangeInput | None = strawberry.UNSET
    keys: list[str] | None = strawberry.UNSET
    all: bool | None = strawberry.field(
        default=strawberry.UNSET, description="Every partition of the job; must be true."
    )


@strawberry.input(description="A request to run a target over a partition selection.")
class LaunchBackfillInput:
    target: BackfillTargetInput
    partitions: PartitionSelectionInput
    reprocess: Reprocess | None = strawberry.field(
        default=None, description="Which partitions run again; MISSING when null."
    )
    order: BackfillOrder | None = strawberry.field(
        default=None, description="Launch order; OLDEST_FIRST when null."
    )
    max_concurrent_runs: int | None = strawberry.field(
        default=None, description="At most this many runs of this backfill at once (1..10000)."
    )
    priority: int | None = strawberry.field(
        default=None,
        description="Higher is claimed first, with a bigger share of the room (-1000..1000); "
        "the job's default (0 unless it names one) when null.",
    )
    run_config: JSON | None = strawberry.field(
        default=None, description="Given to every run; validated against the job's config schema."
    )
    tags: list[TagInput] | None = None
    title: str | None = None
    description: str | None = None
    idempotency_key: str | None = strawberry.field(
        default=None,
        description="Sending the same key with the same input returns the first backfill and "
        "creates nothing; the same key with another input is refused "
        "(IDEMPOTENCY_KEY_REUSED).",
    )
    notify: list[NotifyInput] | None = strawberry.field(
        default=None,
        description="Webhooks told about this backfill's lifecycle events (besides the "
        "server's), signed with the server's key. At most 10.",
    )


@strawberry.input
class PauseBackfillInput:
    id: strawberry.ID


@strawberry.input
class ResumeBackfillInput:
    id: strawberry.ID


@strawberry.input
class CancelBackfillInput:
    id: strawberry.ID


@strawberry.input(
    description="What to change of a running or paused backfill; an absent field is left as it is."
)
class UpdateBackfillInput:
    id: strawberry.ID
    max_concurrent_runs: int | None = strawberry.field(
        default=strawberry.UNSET,
        description="At most this many runs at once (1..10000), null for no limit of its own. "
        "A lower limit holds from the daemon's next claim: no run starts beyond it, runs in "
        "flight finish.",
    )
    priority: int | None = strawberry.field(
        default=strawberry.UNSET, description="Its new priority (-1000..1000); not null."
    )
    title: str | None = strawberry.field(
        default=strawberry.UNSET, description="Its new title; null removes it."
    )
    description: str | None = strawberry.field(
        default=strawberry.UNSET, description="Its new description; null removes it."
    )


@strawberry.input
class RetryBackfillInput:
    id: strawberry.ID
    include: list[RetryInclude] | None = strawberry.field(
        default=None, description="Which partitions run again; [FAILED] when null."
    )
    idempotency_key: str | None = None


@strawberry.input(description="Which backfills a list shows; every field given must hold.")
class BackfillFilter:
    statuses: list[BackfillStatus] | None = None
    job: str | None = None
    tag: TagInput | None = None
    asset: str | None = strawberry.field(
        default=None, description="Asset backfills whose selection includes this asset."
    )
    creator: str | None = strawberry.field(
        default=None, description="Backfills created by this name (a token or a person)."
    )
    team: str | None = strawberry.field(
        default=None, description="Backfills that act for this team."
    )
    tags: list[TagInput] | None = strawberry.field(
        default=None, description="Backfills that carry every one of these tags."
    )
    search: str | None = strawberry.field(
        default=None,
        description="Backfills whose title contains this text, ignoring case (at most 200 "
        "characters; empty for no filter).",
    )
    created_after: datetime | None = strawberry.field(
        default=None, description="Backfills created at or after this time."
    )
    created_before: datetime | None = strawberry.field(
        default=None, description="Backfills created before this time."
    )


@strawberry.input
class DynamicPartitionsInput:
    name: str = strawberry.field(description="The name of the DynamicPartitions definition.")
    keys: list[str]
