"""The Query and Mutation roots, and the strawberry Schema of the public v1 API."""

from __future__ import annotations

import functools
from collections.abc import AsyncGenerator
from typing import Any

import strawberry
from graphql import GraphQLError
from strawberry.extensions import (
    AddValidationRules,
    MaxAliasesLimiter,
    MaxTokensLimiter,
    ParserCache,
    QueryDepthLimiter,
    SchemaExtension,
)
from strawberry.extensions.runner import SchemaExtensionsRunner
from strawberry.schema.config import StrawberryConfig
from strawberry.schema.name_converter import NameConverter
from strawberry.schema.schema import StrawberryGraphQLCoreExecutionContext
from strawberry.types import ExecutionContext

from backfiller.config import Settings
from backfiller.ids import parse_backfill_id, parse_evaluation_id, parse_run_id
from backfiller.observability.api_metrics import OperationMetrics
from backfiller.resolvers import admin as admin_resolvers
from backfiller.resolvers import assets as asset_resolvers
from backfiller.resolvers import backfill_updates as update_resolvers
from backfiller.resolvers import backfills as backfill_resolvers
from backfiller.resolvers import jobs as job_resolvers
from backfiller.resolvers import marking as mark_resolvers
from backfiller.resolvers import progress as progress_resolvers
from backfiller.resolvers import teams as team_resolvers
from backfiller.resolvers import triggers as trigger_resolvers
from backfiller.resolvers.authorize import Authorize
from backfiller.resolvers.authorize_early import AuthorizingMixin
from backfiller.resolvers.document_memo import DocumentMemo
from backfiller.resolvers.errors import MaskUnexpectedErrors
from backfiller.resolvers.limits import QueryCostLimiter, tag_error_codes
from backfiller.resolvers.plain_fields import PlainFieldsMixin
from backfiller.resolvers.remembered_validation import RememberedValidation
from backfiller.resolvers.string_lists import StringListsMixin
from backfiller.schema.admin import (
    ApiTokenConnection,
    AuditEntryConnection,
    Caller,
    CreateApiTokenPayload,
    RevokeApiTokenPayload,
    SetTeamLimitPayload,
    TeamLimit,
    UpdateApiTokenPayload,
)
from backfiller.schema.asset_backfills import Asset
from backfiller.schema.backfills import Backfill, BackfillConnection, Run, RunConnection
from backfiller.schema.common import Node
from backfiller.schema.extension_hooks import RememberingExtensionsRunner
from backfiller.schema.input_values import build_inputs_directly
from backfiller.schema.jobs import Job
from backfiller.schema.marks import MarkPartitionsPayload, PartitionMark
from backfiller.schema.naming import RememberingNameConverter
from backfiller.schema.payloads import (
    CancelBackfillPayload,
    DynamicPartitionsPayload,
    LaunchBackfillPayload,
    PauseBackfillPayload,
    PreviewBackfillPayload,
    ResumeBackfillPayload,
    RetryBackfillPayload,
    UpdateBackfillPayload,
)
from backfiller.schema.subscriptions import BackfillProgress
from backfiller.schema.triggers import (
    EvaluateTriggerPayload,
    SetTriggerEnabledPayload,
    Trigger,
    TriggerEvaluation,
)

API_VERSION = "v1"


@strawberry.type
class Query:
    @strawberry.field(description="The version of this API: `v1`.")
    def api_version(self) -> str:
        return API_VERSION

    backfill: Backfill | None = strawberry.field(
        resolver=backfill_resolvers.get_backfill, description="A backfill by id; null if none."
    )
    backfills: BackfillConnection = strawberry.field(
        resolver=backfill_resolvers.list_backfills,
        description="Backfills of every job, newest first. `first` is at most 100.",
    )
    jobs: list[Job] = strawberry.field(resolver=job_resolvers.list_jobs, description="Every job.")
    assets: list[Asset] = strawberry.field(
        resolver=asset_resolvers.list_assets, description="Every asset, in dependency order."
    )
    asset: Asset | None = strawberry.field(
        resolver=asset_resolvers.get_asset, description="An asset by name."
    )
    job: Job | None = strawberry.field(resolver=job_resolvers.get_job, description="A job by name.")
    run: Run | None = strawberry.field(resolver=job_resolvers.get_run, description="A run by id.")
    runs: RunConnection = strawberry.field(
        resolver=job_resolvers.list_runs, description="Runs of every backfill, newest first."
    )
    triggers: list[Trigger] = strawberry.field(
        resolver=trigger_resolvers.list_triggers, description="Every trigger, by name."
    )
    trigger: Trigger | None = strawberry.field(
        resolver=trigger_resolvers.get_trigger, description="A trigger by name."
    )

    partition_marks: list[PartitionMark] = strawberry.field(
        resolver=mark_resolvers.list_partition_marks,
        description="Partitions of a job (or asset) marked by hand (`markPartitions`), newest "
        "first; of one partition with `partitionKey`; older than the mark `before` with it. "
        "`first` is at most 100.",
    )

    me: Caller = strawberry.field(
        resolver=admin_resolvers.me, description="Who is asking: the token of this request."
    )
    api_tokens: ApiTokenConnection = strawberry.field(
        resolver=admin_resolvers.list_api_tokens,
        description="API tokens, oldest first; active ones unless `includeRevoked`. Admin only.",
    )
    audit_log: AuditEntryConnection = strawberry.field(
        resolver=admin_resolvers.list_audit_entries,
        description="Every mutation (who, what, when, outcome), newest first. Admin only.",
    )
    team_limits: list[TeamLimit] = strawberry.field(
        resolver=team_resolvers.team_limits,
        description="The teams that have a limit of their own on runs in flight, by name. "
        "Admin only.",
    )

    @strawberry.field(description="Any object by its opaque id.")
    async def node(self, info: strawberry.Info[Any, Any], id: strawberry.ID) -> Node | None:
        if parse_backfill_id(id) is not None:
            return await backfill_resolvers.get_backfill(info, id)
        if parse_run_id(id) is not None:
            return await job_resolvers.get_run(info, id)
        if parse_evaluation_id(id) is not None:
            return await trigger_resolvers.get_trigger_evaluation(info, id)
        return None


@strawberry.type
class Mutation:
    launch_backfill: LaunchBackfillPayload = strawberry.mutation(
        resolver=backfill_resolvers.launch_backfill,
        description="Launch a backfill. Expected failures come back in `userErrors`.",
    )
    preview_backfill: PreviewBackfillPayload = strawberry.mutation(
        resolver=backfill_resolvers.preview_backfill,
        description="What `launchBackfill` would do with this input. Writes nothing.",
    )
    pause_backfill: PauseBackfillPayload = strawberry.mutation(
        resolver=backfill_resolvers.pause_backfill,
        description="Stop launching new runs; runs in flight finish.",
    )
    resume_backfill: ResumeBackfillPayload = strawberry.mutation(
        resolver=backfill_resolvers.resume_backfill, description="Continue a paused backfill."
    )
    cancel_backfill: CancelBackfillPayload = strawberry.mutation(
        resolver=backfill_resolvers.cancel_backfill,
        description="Stop launching runs and stop the runs in flight.",
    )
    retry_backfill: RetryBackfillPayload = strawberry.mutation(
        resolver=backfill_resolvers.retry_backfill,
        description="Launch the chosen partitions of a finished backfill again, as a new "
        "backfill whose `parent` is this one.",
    )
    add_dynamic_partitions: DynamicPartitionsPayload = strawberry.mutation(
        resolver=job_resolvers.add_dynamic_partitions,
        description="Add keys to a dynamic partitions definition (existing keys are kept).",
    )
    delete_dynamic_partitions: DynamicPartitionsPayload = strawberry.mutation(
        resolver=job_resolvers.delete_dynamic_partitions,
        description="Delete keys from a dynamic partitions definition.",
    )
    evaluate_trigger: EvaluateTriggerPayload = strawberry.mutation(
        resolver=trigger_resolvers.evaluate_trigger,
        description="Evaluate a trigger now and launch what it returns (nothing with "
        "`dryRun`). Every evaluation is recorded; a failing trigger is an evaluation with "
        "outcome FAILED.",
    )
    set_trigger_enabled: SetTriggerEnabledPayload = strawberry.mutation(
        resolver=trigger_resolvers.set_trigger_enabled,
        description="Turn the daemon's interval evaluation of a trigger on or off.",
    )
    mark_partitions: MarkPartitionsPayload = strawberry.mutation(
        resolver=mark_resolvers.mark_partitions,
        description="Record partitions of a job (or assets) as SUCCEEDED or SKIPPED without "
        "running them, with a reason (audited). A marked success counts as a success "
        "(`reprocess: MISSING` skips it, asset downstreams run on it). Refused with "
        "PARTITIONS_RUNNING, marking nothing, while a backfill runs one of them.",
    )
    create_api_token: CreateApiTokenPayload = strawberry.mutation(
        resolver=admin_resolvers.create_api_token,
        description="Create an API token; its secret is in the payload, once. Admin only.",
    )
    revoke_api_token: RevokeApiTokenPayload = strawberry.mutation(
        resolver=admin_resolvers.revoke_api_token,
        description="Revoke an API token at once. Admin only.",
    )
    update_backfill: UpdateBackfillPayload = strawberry.mutation(
        resolver=update_resolvers.update_backfill,
        description="Change the concurrency, priority, title or description of a backfill "
        "that is not finished (requested, running or paused); recorded as an UPDATED event. "
        "A lower `maxConcurrentRuns` holds from the daemon's next claim: no run starts beyond "
        "it, runs in flight finish.",
    )
    update_api_token: UpdateApiTokenPayload = strawberry.mutation(
        resolver=admin_resolvers.update_api_token,
        description="Change an API token's team. Admin only.",
    )
    set_team_limit: SetTeamLimitPayload = strawberry.mutation(
        resolver=team_resolvers.set_team_limit,
        description="Set or remove a team's limit on its runs in flight, across all its "
        "backfills and daemons. Admin only.",
    )


@strawberry.type
class Subscription:
    backfill_progress: AsyncGenerator[BackfillProgress, None] = strawberry.subscription(
        resolver=progress_resolvers.backfill_progress,
        description="A backfill's status and counts: now, then each time they change. Ends "
        "after the message whose `ended` is true. Over graphql-transport-ws.",
    )


class SecureExecutor(AuthorizingMixin, StrawberryGraphQLCoreExecutionContext):
    """strawberry's executor, which refuses a wholly refused mutation before coercing its
    variables (security: always on)."""


class FastExecutor(
    AuthorizingMixin, StringListsMixin, PlainFieldsMixin, StrawberryGraphQLCoreExecutionContext
):
    """:class:`SecureExecutor` with the speed mixins: long lists of strings coerced in one
    step, plain fields read in one step (``Settings.fast_paths``). Each mixin is optional and
    checked against graphql-core's own path (``tests/unit/test_plain_fields.py``,
    ``tests/integration/test_string_list_variables.py``)."""


def build_schema(settings: Settings | None = None) -> PublicSchema:
    """The public v1 schema, with its protective extensions.

    With ``settings.fast_paths`` (the default), the schema takes the speed paths that reach
    into strawberry and graphql-core: the executor's mixins, names remembered
    (``schema/naming.py``), extension hooks worked out once (``schema/extension_hooks.py``)
    and inputs built in one step (``schema/input_values.py``; that one is given to the input
    classes themselves, so it holds for the process once a fast schema is built). Off, each
    takes the library's own path.
    """
    settings = settings or Settings()
    depth, tokens, aliases, cost = (
        settings.max_query_depth,
        settings.max_query_tokens,
        settings.max_aliases,
        settings.max_query_cost,
    )
    # The depth and alias rules are built once: the same rule classes on every request keep
    # the validation cache's key stable (a fresh limiter per request would miss it every time).
    rules = [
        *QueryDepthLimiter(max_depth=depth).validation_rules,
        *MaxAliasesLimiter(max_alias_count=aliases).validation_rules,
    ]
    protective: list[Any] = [
        OperationMetrics,
        lambda: AddValidationRules(rules),
        lambda: MaxTokensLimiter(max_token_count=tokens),
    ]
    # Validation, sizes and costs remembered per parsed document (each in its own memo), which
    # only the parse cache makes the same object again.
    memo = DocumentMemo(512 if settings.graphql_cache else 0)
    if settings.graphql_cache:
        validated = DocumentMemo(512)
        protective += [lambda: ParserCache(maxsize=512), lambda: RememberedValidation(validated)]
    protective += [lambda: QueryCostLimiter(max_cost=cost, memo=memo), Authorize]
    protective.append(MaskUnexpectedErrors)
    fast = settings.fast_paths
    built = PublicSchema(
        query=Query,
        mutation=Mutation,
        subscription=Subscription,
        types=[Backfill, Run, TriggerEvaluation],
        config=StrawberryConfig(
            disable_field_suggestions=False,
            name_converter=RememberingNameConverter() if fast else NameConverter(),
        ),
        extensions=protective,
        execution_context_class=FastExecutor if fast else SecureExecutor,
    )
    built.remembers_hooks = fast
    if fast:
        build_inputs_directly(built)  # inputs built in one step, not field by field
    return built


class PublicSchema(strawberry.Schema):
    """Errors are logged once, by :class:`MaskUnexpectedErrors`, with the request id."""

    remembers_hooks = True
    """Whether the extensions' hooks are worked out once per class (a fast path)."""

    def process_errors(self, errors: list[GraphQLError], execution_context: Any = None) -> None:
        tag_error_codes(errors)

    def create_extensions_runner(
        self, execution_context: ExecutionContext, extensions: list[SchemaExtension]
    ) -> SchemaExtensionsRunner:
        if not self.remembers_hooks:
            return super().create_extensions_runner(execution_context, extensions)
        return RememberingExtensionsRunner(execution_context, extensions)


schema: PublicSchema
"""The schema of default settings (``schema export``, the tests), built on first use: a server
builds its own from its settings and never pays for this one."""


@functools.cache
def _default_schema() -> PublicSchema:
    return build_schema()


def __getattr__(name: str) -> Any:
    if name == "schema":
        return _default_schema()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
