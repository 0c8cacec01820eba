"""Public types of triggers and their evaluations.

A trigger's evaluations are loaded by a function the resolvers layer gives the type (a
private field), so this module never learns how they are stored.
"""

from __future__ import annotations

import enum
from collections.abc import Awaitable, Callable
from datetime import datetime

import strawberry

from backfiller.schema.backfills import (
    Backfill,
    BackfillPreview,
    BackfillTarget,
    PartitionSelection,
)
from backfiller.schema.common import JSON, Node, PageInfo, Tag, UserError
from backfiller.schema.enums import BackfillOrder, Reprocess


@strawberry.enum(description="How an evaluation of a trigger ended.")
class TriggerEvaluationOutcome(enum.Enum):
    LAUNCHED = strawberry.enum_value(
        "LAUNCHED", description="The trigger returned backfill requests and they were launched."
    )
    SKIPPED = strawberry.enum_value(
        "SKIPPED", description="The trigger decided to launch nothing; see `skipReason`."
    )
    FAILED = strawberry.enum_value(
        "FAILED",
        description="The trigger raised, ran past its time limit, returned something invalid, "
        "or a request it returned was refused; see `errorMessage`.",
    )


@strawberry.enum(
    description="What a cron trigger does with the ticks that passed while no daemon ran."
)
class TriggerCatchUp(enum.Enum):
    LATEST = strawberry.enum_value(
        "LATEST", description="Evaluate once, for the latest missed tick (the default)."
    )
    ALL = strawberry.enum_value(
        "ALL",
        description="Evaluate every missed tick in order, each with its own scheduled time "
        "(at most 100 after one gap: the latest ones).",
    )
    NONE = strawberry.enum_value("NONE", description="Skip the missed ticks; wait for the next.")


@strawberry.type(description="A backfill request that a trigger returned, and what became of it.")
class TriggerRequest:
    target: BackfillTarget
    partition_selection: PartitionSelection
    reprocess: Reprocess
    order: BackfillOrder
    max_concurrent_runs: int | None
    run_config: JSON | None
    tags: list[Tag]
    title: str | None
    description: str | None
    idempotency_key: str | None
    preview: BackfillPreview | None = strawberry.field(
        description="What launching it does; given on a dry run, null when it was refused."
    )
    backfill: Backfill | None = strawberry.field(
        description="The backfill it launched (or found by its idempotency key); null on a "
        "dry run or when refused."
    )
    user_errors: list[UserError] = strawberry.field(
        description="Why the request was (or would be) refused, with the same codes as "
        "`launchBackfill`."
    )


@strawberry.type(description="One evaluation of a trigger, with its outcome.")
class TriggerEvaluation(Node):
    id: strawberry.ID
    trigger: str = strawberry.field(description="The trigger's name.")
    outcome: TriggerEvaluationOutcome
    skip_reason: str | None = strawberry.field(description="Why it SKIPPED.")
    error_message: str | None = strawberry.field(
        description="Why it FAILED. The user's traceback stays on the server."
    )
    duration_seconds: float
    actor: str | None = strawberry.field(
        description="Who asked: a token's name, a run (when a job evaluates it through its "
        "client), `daemon` for a scheduled evaluation, or null without auth."
    )
    dry_run: bool = strawberry.field(description="A dry run launches nothing.")
    evaluated_at: datetime
    backfills: list[Backfill] = strawberry.field(description="The backfills it launched.")
    requests: list[TriggerRequest] = strawberry.field(
        description="The requests the trigger returned, in its order."
    )
    scheduled_at: datetime | None = strawberry.field(
        description="The tick this evaluation stands for, when the daemon evaluated it on "
        "its schedule: a cron time (a tick caught up later keeps its own time) or the time an "
        "interval evaluation was due. Null on demand or from a job."
    )


@strawberry.type
class TriggerEvaluationEdge:
    cursor: str
    node: TriggerEvaluation


@strawberry.type
class TriggerEvaluationConnection:
    edges: list[TriggerEvaluationEdge]
    page_info: PageInfo

    @strawberry.field
    def nodes(self) -> list[TriggerEvaluation]:
        return [e.node for e in self.edges]


EvaluationsLoader = Callable[[int, str | None], Awaitable[TriggerEvaluationConnection]]
FireTimesLoader = Callable[[int], list[datetime]]


@strawberry.type(
    description="A function of the definitions that decides whether to launch backfills: "
    "evaluated on demand (`evaluateTrigger`), by the daemon on its interval or cron schedule, "
    "or from a job."
)
class Trigger:
    name: str
    description: str | None
    enabled: bool = strawberry.field(
        description="Whether the daemon evaluates it on its interval. Evaluating on demand "
        "works either way."
    )
    interval_seconds: float | None = strawberry.field(
        description="Seconds between two evaluations by the daemon; null: only on demand."
    )
    timeout_seconds: float = strawberry.field(
        description="An evaluation running longer is recorded FAILED."
    )
    next_evaluation_at: datetime | None = strawberry.field(
        description="When the daemon evaluates it next (null without interval or cron, or "
        "disabled). For a cron trigger: its next tick not yet evaluated."
    )
    last_evaluation: TriggerEvaluation | None
    cron: str | None = strawberry.field(
        description="The cron expression (5 fields, or an alias such as `@daily`) on which the "
        "daemon evaluates it, read on the wall clock of `timezone`; null without one."
    )
    timezone: str | None = strawberry.field(
        description="The IANA time zone of `cron` (null without cron)."
    )
    catch_up: TriggerCatchUp | None = strawberry.field(
        description="What it does with ticks missed while no daemon ran (null without cron)."
    )
    _evaluations: strawberry.Private[EvaluationsLoader]
    _fire_times: strawberry.Private[FireTimesLoader]

    @strawberry.field(
        description="The next times its cron expression fires, from now, in increasing order "
        "(`count` from 0 to 100). Across clock changes every matching wall-clock time fires "
        "once: a repeated time at its first occurrence, a skipped time at the end of the "
        "jump. Empty without cron."
    )
    def next_fire_times(self, count: int = 5) -> list[datetime]:
        return self._fire_times(count)

    @strawberry.field(description="Its recorded evaluations, newest first.")
    async def evaluations(
        self, first: int = 20, after: str | None = None
    ) -> TriggerEvaluationConnection:
        return await self._evaluations(first, after)


@strawberry.input
class EvaluateTriggerInput:
    name: str
    dry_run: bool = strawberry.field(
        default=False,
        description="Compute the outcome and preview the requests, launching nothing. "
        "The evaluation is recorded (with `dryRun: true`); the cursor is not saved.",
    )


@strawberry.type
class EvaluateTriggerPayload:
    evaluation: TriggerEvaluation | None = strawberry.field(
        description="The recorded evaluation; null only with `userErrors`."
    )
    user_errors: list[UserError] = strawberry.field(
        description="TRIGGER_NOT_FOUND. A trigger that fails is an evaluation with outcome "
        "FAILED, not a user error."
    )


@strawberry.input
class SetTriggerEnabledInput:
    name: str
    enabled: bool


@strawberry.type
class SetTriggerEnabledPayload:
    trigger: Trigger | None
    user_errors: list[UserError]
