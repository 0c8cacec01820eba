"""Resolvers of the backfill mutations and queries: public input in, public types out."""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Iterable

import strawberry

from backfiller.definitions.jobs import JobDefinition
from backfiller.domain import (
    START_PERMIT_SECONDS,
    EventKind,
    SlotState,
    SteerRefused,
    SteerVerb,
    steer_target,
)
from backfiller.ids import backfill_id, encode_cursor, parse_backfill_id
from backfiller.planning import (
    key_at,
    request_fingerprint,
)
from backfiller.resolvers.auth import mark_audited, success_audit
from backfiller.resolvers.commands import (
    preview_of,
    request_from_input,
    user_error,
    user_error_of,
    user_errors_of,
)
from backfiller.resolvers.context import Context, Info, PublicError, check_page_size
from backfiller.resolvers.pages import cursor_value, page_info
from backfiller.resolvers.policy import job_refusal
from backfiller.resolvers.translate import backfill_from_record, backfill_from_row, backfill_state
from backfiller.schema.backfills import Backfill, BackfillConnection, BackfillEdge
from backfiller.schema.common import UserError, UserErrorCode
from backfiller.schema.enums import RetryInclude
from backfiller.schema.inputs import (
    BackfillFilter,
    CancelBackfillInput,
    LaunchBackfillInput,
    PauseBackfillInput,
    ResumeBackfillInput,
    RetryBackfillInput,
)
from backfiller.schema.payloads import (
    CancelBackfillPayload,
    LaunchBackfillPayload,
    PauseBackfillPayload,
    PreviewBackfillPayload,
    ResumeBackfillPayload,
    RetryBackfillPayload,
)
from backfiller.services.asset_launching import asset_names_of, asset_retry_of
from backfiller.services.launch_types import (
    LaunchPlan,
    LaunchRequest,
    new_backfill,
    retry_request,
)
from backfiller.services.launching import (
    Launched,
    create_backfill,
    preview_launch,
    validate_launch,
)
from backfiller.services.selections import Unpinnable
from backfiller.storage.launches import NewBackfill
from backfiller.storage.notifications import NotificationRepository
from backfiller.storage.records import BackfillRecord
from backfiller.storage.repositories import (
    BackfillQuery,
    BackfillRepository,
    EventRepository,
    SlotReads,
)


async def launch_backfill(info: Info, input: LaunchBackfillInput) -> LaunchBackfillPayload:
    ctx = info.context
    request = request_from_input(input)
    if not isinstance(request, LaunchRequest):
        return LaunchBackfillPayload(backfill=None, user_errors=request)
    plan = await validate_launch(ctx.services, request, creator=ctx.actor, team=ctx.team)
    if not isinstance(plan, LaunchPlan):
        return LaunchBackfillPayload(backfill=None, user_errors=user_errors_of(plan))
    refused = _asset_scope(ctx, plan)
    if refused is not None:
        return LaunchBackfillPayload(backfill=None, user_errors=[refused])
    # The mutation's success entry of the audit log commits with the backfill.
    audit = success_audit(ctx)
    launched = await create_backfill(
        ctx.services,
        plan.new,
        audit=(lambda pk: audit(backfill_id(pk))) if audit is not None else None,
    )
    if not isinstance(launched, Launched):
        return LaunchBackfillPayload(backfill=None, user_errors=[user_error_of(launched)])
    if launched.created and audit is not None:
        mark_audited(ctx)
    return LaunchBackfillPayload(backfill=backfill_from_record(launched.record), user_errors=[])


async def preview_backfill(info: Info, input: LaunchBackfillInput) -> PreviewBackfillPayload:
    ctx = info.context
    request = request_from_input(input)
    if not isinstance(request, LaunchRequest):
        return PreviewBackfillPayload(preview=None, user_errors=request)
    plan = await validate_launch(ctx.services, request, creator=ctx.actor, team=ctx.team)
    if not isinstance(plan, LaunchPlan):
        return PreviewBackfillPayload(preview=None, user_errors=user_errors_of(plan))
    refused = _asset_scope(ctx, plan)
    if refused is not None:
        return PreviewBackfillPayload(preview=None, user_errors=[refused])
    preview = await preview_launch(ctx.services, plan)
    return PreviewBackfillPayload(preview=preview_of(preview), user_errors=[])


def _asset_scope(ctx: Context, plan: LaunchPlan) -> UserError | None:
    """A job-scoped token launches an asset backfill only if it may launch every asset of
    it (each asset runs as a job of its name); a job's scope is checked by ``Authorize``."""
    if plan.assets is None:
        return None
    return _assets_refusal(ctx, asset_names_of(plan))


def _assets_refusal(ctx: Context, names: Iterable[str]) -> UserError | None:
    for name in names:
        refused = job_refusal(ctx.principal, name)
        if refused is not None:
            message = f"this token may not launch asset {name!r}"
            return user_error(refused.code, message, ["target", "assets", "names"])
    return None


def _not_found(raw: str) -> UserError:
    return user_error(UserErrorCode.BACKFILL_NOT_FOUND, f"no backfill has id {raw!r}", ["id"])


def _invalid_state(record: BackfillRecord, verb: str) -> UserError:
    status = backfill_from_record(record).status.value
    return user_error(
        UserErrorCode.INVALID_STATE, f"cannot {verb} a backfill that is {status}", ["id"]
    )


_STEER_EVENTS = {
    SteerVerb.PAUSE: EventKind.PAUSED,
    SteerVerb.RESUME: EventKind.RESUMED,
    SteerVerb.CANCEL: EventKind.CANCEL_REQUESTED,
}


async def _steer(
    ctx: Context, raw_id: str, verb: SteerVerb
) -> tuple[BackfillRecord | None, list[UserError]]:
    """Pause, resume or cancel, as conditional updates from the transition table.

    Retried on a lost race. Cancel ends the backfill at once (CANCELED) when nothing of it is
    queued or running, else asks the daemon (CANCELING). Once a pause or cancel has answered,
    no run of the backfill starts: the start gate checks the backfill's status in the database,
    and the answer waits out the gate's permits (``domain.START_PERMIT_SECONDS``).
    """
    record, errors = await _steer_once(ctx, raw_id, verb)
    if verb is not SteerVerb.RESUME and not errors:  # moved now, or by a request still waiting
        await asyncio.sleep(START_PERMIT_SECONDS)
    return record, errors


async def _steer_once(
    ctx: Context, raw_id: str, verb: SteerVerb
) -> tuple[BackfillRecord | None, list[UserError]]:
    """:func:`_steer`'s transaction."""
    pk = parse_backfill_id(raw_id)
    if pk is None:
        return None, [_not_found(raw_id)]
    for _ in range(5):
        async with ctx.database.write() as session:
            repo = BackfillRepository(session)
            events = EventRepository(session)
            record = await repo.get(pk)
            if record is None:
                return None, [_not_found(raw_id)]
            state, now = record.status, ctx.now()
            try:
                target = steer_target(verb, state, started=record.started_at is not None)
            except SteerRefused:
                return None, [_invalid_state(record, verb.value)]
            if target is None:
                return record, []
            if verb is SteerVerb.CANCEL and await repo.cancel_idle(pk, now):
                await events.add(pk, EventKind.CANCELED, now, ctx.actor, None)
                return await repo.get(pk), []
            if await repo.move(pk, target, [state], now):
                await events.add(pk, _STEER_EVENTS[verb], now, ctx.actor, None)
                return await repo.get(pk), []
    raise RuntimeError("the backfill kept changing under the request")


async def pause_backfill(info: Info, input: PauseBackfillInput) -> PauseBackfillPayload:
    record, errors = await _steer(info.context, input.id, SteerVerb.PAUSE)
    return PauseBackfillPayload(
        backfill=backfill_from_record(record) if record else None, user_errors=errors
    )


async def resume_backfill(info: Info, input: ResumeBackfillInput) -> ResumeBackfillPayload:
    record, errors = await _steer(info.context, input.id, SteerVerb.RESUME)
    return ResumeBackfillPayload(
        backfill=backfill_from_record(record) if record else None, user_errors=errors
    )


async def cancel_backfill(info: Info, input: CancelBackfillInput) -> CancelBackfillPayload:
    record, errors = await _steer(info.context, input.id, SteerVerb.CANCEL)
    return CancelBackfillPayload(
        backfill=backfill_from_record(record) if record else None, user_errors=errors
    )


def _retry_states(include: Iterable[RetryInclude]) -> set[SlotState]:
    states: set[SlotState] = set()
    for item in include:
        if item is RetryInclude.FAILED:
            states.add(SlotState.FAILED)
        elif item is RetryInclude.CANCELED:
            states.add(SlotState.CANCELED)
        else:
            states.update({SlotState.PENDING, SlotState.QUEUED})
    return states


def _retry_of(
    parent: BackfillRecord,
    job: JobDefinition,
    keys: list[str],
    include: list[RetryInclude],
    input: RetryBackfillInput,
    creator: str | None,
    team: str | None,
) -> NewBackfill:
    """The child backfill that runs ``keys`` of ``parent`` again."""
    return new_backfill(
        retry_request(parent, keys, input.idempotency_key),
        job=job,
        partitions_fingerprint=job.partitions.fingerprint(),
        first_index=0,
        total=len(keys),
        creator=creator,
        team=team,
        parent_id=parent.id,
        fingerprint=_retry_fingerprint(parent, include),
    )


async def retry_backfill(info: Info, input: RetryBackfillInput) -> RetryBackfillPayload:
    """Launch the chosen partitions of a finished backfill again, as its child."""
    ctx = info.context
    pk = parse_backfill_id(input.id)
    if pk is None:
        return RetryBackfillPayload(backfill=None, user_errors=[_not_found(input.id)])
    include = input.include or [RetryInclude.FAILED]
    wanted = _retry_states(include)
    async with ctx.database.read() as session:
        parent = await BackfillRepository(session).get(pk)
        if parent is None:
            return RetryBackfillPayload(backfill=None, user_errors=[_not_found(input.id)])
        if not parent.status.is_terminal:
            return RetryBackfillPayload(
                backfill=None, user_errors=[_invalid_state(parent, "retry")]
            )
        if parent.asset_target is not None:
            return await _retry_assets(ctx, parent, include, wanted, input)
        job = ctx.definitions.get_job(parent.job_name)
        if job is None:
            return RetryBackfillPayload(
                backfill=None,
                user_errors=[
                    user_error(
                        UserErrorCode.JOB_NOT_FOUND,
                        f"job {parent.job_name!r} is no longer defined",
                        ["id"],
                    )
                ],
            )
        statuses = await SlotReads(session).statuses(pk)
    pinned = await ctx.services.pins.pin(ctx.database, ctx.definitions, parent)
    if isinstance(pinned, Unpinnable):
        return RetryBackfillPayload(
            backfill=None,
            user_errors=[user_error(UserErrorCode.PARTITION_NOT_FOUND, pinned.message, ["id"])],
        )
    space, resolved = pinned.space, pinned.resolved
    chosen = [p for p, s in statuses if s in wanted]
    if SlotState.PENDING in wanted and parent.planned < parent.total:
        chosen.extend(range(parent.planned, parent.total))
    if not chosen:
        return RetryBackfillPayload(
            backfill=None,
            user_errors=[
                user_error(
                    UserErrorCode.EMPTY_SELECTION,
                    "the backfill has no partition in the statuses to retry",
                    ["include"],
                )
            ],
        )
    refused = job_refusal(ctx.principal, parent.job_name)  # a job-scoped token
    if refused is not None:
        return RetryBackfillPayload(
            backfill=None, user_errors=[user_error(refused.code, refused.message, refused.field)]
        )
    keys = [key_at(resolved, parent.order, space, p) for p in sorted(chosen)]
    new = _retry_of(parent, job, keys, include, input, ctx.actor, ctx.team)
    return await _create_child(ctx, parent, new)


async def _retry_assets(
    ctx: Context,
    parent: BackfillRecord,
    include: list[RetryInclude],
    wanted: set[SlotState],
    input: RetryBackfillInput,
) -> RetryBackfillPayload:
    """An asset backfill's child: only what failed, and what was skipped because of it."""
    assert parent.asset_target is not None
    refused = _assets_refusal(ctx, (str(p["name"]) for p in parent.asset_target["parts"]))
    if refused is not None:
        return RetryBackfillPayload(backfill=None, user_errors=[refused])
    child = await asset_retry_of(
        ctx.services,
        parent,
        wanted,
        _retry_fingerprint(parent, include),
        idempotency_key=input.idempotency_key,
        creator=ctx.actor,
        team=ctx.team,
    )
    if isinstance(child, str):
        error = user_error(UserErrorCode.EMPTY_SELECTION, child, ["include"])
        return RetryBackfillPayload(backfill=None, user_errors=[error])
    return await _create_child(ctx, parent, child)


def _retry_fingerprint(parent: BackfillRecord, include: list[RetryInclude]) -> str:
    return request_fingerprint({"retry": parent.id, "include": sorted(i.value for i in include)})


async def _create_child(
    ctx: Context, parent: BackfillRecord, new: NewBackfill
) -> RetryBackfillPayload:
    # A retry notifies the receivers its parent notified (the parent's `notify`).
    async with ctx.database.read() as session:
        hooks = await NotificationRepository(session).webhooks_of([parent.id])
    new = dataclasses.replace(new, notify=tuple(hooks.get(parent.id, ())))
    launched = await create_backfill(ctx.services, new)
    if not isinstance(launched, Launched):
        return RetryBackfillPayload(backfill=None, user_errors=[user_error_of(launched)])
    record = launched.record
    async with ctx.database.write() as session:
        await EventRepository(session).add(
            parent.id,
            EventKind.RETRIED,
            ctx.now(),
            ctx.actor,
            f"retried as {backfill_id(record.id)}",
        )
    return RetryBackfillPayload(backfill=backfill_from_record(record), user_errors=[])


# -- queries ---------------------------------------------------------------------------------

MAX_SEARCH_LENGTH = 200


def backfill_query(filter: BackfillFilter) -> BackfillQuery:
    """The storage's query of a ``backfills`` filter.

    Raises:
        PublicError: a search text over ``MAX_SEARCH_LENGTH`` characters, or a time without
            its offset (``INVALID_ARGUMENT``).
    """
    search = (filter.search or "").strip()
    if len(search) > MAX_SEARCH_LENGTH:
        raise PublicError(f"`filter.search` must be at most {MAX_SEARCH_LENGTH} characters")
    for name, value in (
        ("createdAfter", filter.created_after),
        ("createdBefore", filter.created_before),
    ):
        if value is not None and value.tzinfo is None:
            raise PublicError(f"`filter.{name}` must carry a time zone offset")
    return BackfillQuery(
        statuses=[backfill_state(s) for s in filter.statuses] if filter.statuses else None,
        job_name=filter.job,
        tag=(filter.tag.key, filter.tag.value) if filter.tag is not None else None,
        asset=filter.asset,
        creator=filter.creator,
        team=filter.team,
        tags=[(t.key, t.value) for t in filter.tags or ()],
        title_contains=search or None,
        created_after=filter.created_after,
        created_before=filter.created_before,
    )


async def get_backfill(info: Info, id: strawberry.ID) -> Backfill | None:
    pk = parse_backfill_id(id)
    if pk is None:
        return None
    return await info.context.source.backfill(pk)


async def list_backfills(
    info: Info, first: int = 20, after: str | None = None, filter: BackfillFilter | None = None
) -> BackfillConnection:
    ctx = info.context
    limit = check_page_size(first, ctx.services.settings)
    before_id = cursor_value("bf", after)
    query = BackfillQuery() if filter is None else backfill_query(filter)
    records = await ctx.source.backfill_page(query, limit + 1, before_id)
    page = records[:limit]
    edges = [
        BackfillEdge(cursor=encode_cursor("bf", r.id), node=backfill_from_row(r)) for r in page
    ]
    return BackfillConnection(
        edges=edges,
        page_info=page_info(edges, len(records) > limit, after),
    )


__all__ = [
    "cancel_backfill",
    "get_backfill",
    "launch_backfill",
    "list_backfills",
    "pause_backfill",
    "preview_backfill",
    "resume_backfill",
    "retry_backfill",
]
