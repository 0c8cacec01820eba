"""Resolvers of the backfill mutations and queries: public input in, public types out."""

from __future__ import annotations

from collections.abc import Iterable

import strawberry
from sqlalchemy.exc import IntegrityError

from backfiller import domain
from backfiller.domain import (
    EventKind,
    RunState,
    SlotState,
    SteerRefused,
    SteerVerb,
    steer_target,
)
from backfiller.planning import key_at, keys_between, pin_stored_selection, position_of
from backfiller.resolvers.asset_retries import asset_retry
from backfiller.resolvers.assets import asset_previews
from backfiller.resolvers.auth import mark_audited, success_audit
from backfiller.resolvers.commands import LaunchCommand, command_from_input, user_error
from backfiller.resolvers.context import Context, Info, check_page_size
from backfiller.resolvers.ids import backfill_id, encode_cursor, parse_backfill_id
from backfiller.resolvers.pages import cursor_value, page_info
from backfiller.resolvers.translate import backfill_from_record, backfill_state, skip_reason
from backfiller.schema.backfills import (
    Backfill,
    BackfillConnection,
    BackfillEdge,
    BackfillPreview,
    SkippedPartition,
)
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
from backfiller.storage.records import BackfillRecord
from backfiller.storage.repositories import (
    BackfillQuery,
    BackfillRepository,
    EventRepository,
    NewBackfill,
    PartitionStateRepository,
    SlotReads,
    launch_once,
)
from backfiller.storage.selections import key_space_of, stored_selection

PREVIEW_LISTED = 20


async def insert_backfill(
    ctx: Context, new: NewBackfill, *, audited: bool = False
) -> tuple[BackfillRecord | None, list[UserError]]:
    """Insert a backfill, once per idempotency key, even under concurrent requests.

    With ``audited``, the mutation's success entry of the audit log is written in the same
    transaction as the backfill (the backfill is then what the mutation returns).
    """
    audit = success_audit(ctx) if audited else None
    entry = (lambda pk: audit(backfill_id(pk))) if audit is not None else None
    now = ctx.now()
    for _ in range(3):
        try:
            outcome = await ctx.database.transact(lambda conn: launch_once(conn, new, now, entry))
        except IntegrityError:
            if new.idempotency_key is None:
                raise
            # Another request inserted this key first: the next attempt finds its backfill.
            continue
        if isinstance(outcome, BackfillRecord):
            if audit is not None:
                mark_audited(ctx)
            return outcome, []
        async with ctx.database.read() as session:
            existing = await BackfillRepository(session).get(outcome.backfill_id)
        if existing is not None:
            return _same_request(existing, new)
    raise RuntimeError("could not insert or find the backfill of an idempotency key")


def _same_request(
    existing: BackfillRecord, new: NewBackfill
) -> tuple[BackfillRecord | None, list[UserError]]:
    if existing.request_fingerprint == new.request_fingerprint:
        return existing, []
    return None, [
        user_error(
            UserErrorCode.IDEMPOTENCY_KEY_REUSED,
            f"the idempotency key was used for another request (backfill bf_{existing.id})",
            ["idempotencyKey"],
        )
    ]


async def launch_backfill(info: Info, input: LaunchBackfillInput) -> LaunchBackfillPayload:
    ctx = info.context
    command = await command_from_input(ctx, input)
    if not isinstance(command, LaunchCommand):
        return LaunchBackfillPayload(backfill=None, user_errors=command)
    record, errors = await insert_backfill(ctx, command.new, audited=True)
    if record is None:
        return LaunchBackfillPayload(backfill=None, user_errors=errors)
    return LaunchBackfillPayload(backfill=backfill_from_record(record), user_errors=[])


async def preview_backfill(info: Info, input: LaunchBackfillInput) -> PreviewBackfillPayload:
    ctx = info.context
    command = await command_from_input(ctx, input)
    if not isinstance(command, LaunchCommand):
        return PreviewBackfillPayload(preview=None, user_errors=command)
    if command.assets is not None:
        return PreviewBackfillPayload(preview=await preview_assets(ctx, command), user_errors=[])
    resolved, space, new = command.resolved, command.space, command.new
    skipped: dict[int, domain.SkipReason] = {}
    if new.reprocess is not domain.Reprocess.ALL:
        async with ctx.database.read() as session:
            history = await PartitionStateRepository(session).all_of_job(
                new.job_name, [RunState.SUCCESS, RunState.FAILED]
            )
        for key, state in history.items():
            reason = domain.skip_reason_for(new.reprocess, state)
            if reason is None:
                continue
            position = position_of(resolved, new.order, space, key)
            if position is not None:
                skipped[position] = reason
    first: list[str] = []
    position = 0
    while len(first) < PREVIEW_LISTED and position < resolved.total:
        if position not in skipped:
            first.append(key_at(resolved, new.order, space, position))
        position += 1
    listed = sorted(skipped.items())[:PREVIEW_LISTED]
    preview = BackfillPreview(
        job=new.job_name,
        total=resolved.total,
        runs=resolved.total - len(skipped),
        skipped=len(skipped),
        first_partitions=first,
        skipped_partitions=[
            SkippedPartition(key=key_at(resolved, new.order, space, p), reason=skip_reason(r))
            for p, r in listed
        ],
    )
    return PreviewBackfillPayload(preview=preview, user_errors=[])


async def preview_assets(ctx: Context, command: LaunchCommand) -> BackfillPreview:
    """An asset target's preview: per asset, its level and how many partitions would run."""
    assert command.assets is not None
    launch = command.assets
    previews, skipped = await asset_previews(
        ctx.services, launch.target, launch.levels, command.new.reprocess
    )
    first = [
        launch.target.at_cursor(g, launch.spaces, command.new.order)[1]
        for g in range(min(PREVIEW_LISTED, launch.target.total))
    ]
    return BackfillPreview(
        job=command.new.job_name,
        total=launch.target.total,
        runs=launch.target.total - skipped,
        skipped=skipped,
        first_partitions=first,
        skipped_partitions=[],
        assets=previews,
    )


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
    queued or running, else asks the daemon (CANCELING). Once this commits, no run of the
    backfill starts: the daemon's start gate checks the backfill's status in the database.
    """
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
            child = await asset_retry(ctx, parent, include, wanted, input.idempotency_key)
            if isinstance(child, str):
                error = user_error(UserErrorCode.EMPTY_SELECTION, child, ["include"])
                return RetryBackfillPayload(backfill=None, user_errors=[error])
            return await _insert_child(ctx, parent, child)
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
    space = await key_space_of(job.partitions, ctx.now(), ctx.database)
    try:
        resolved = pin_stored_selection(
            stored_selection(parent), parent.total, job.partitions, space
        )
    except Exception as exc:  # the partitions vanished from the definition
        return RetryBackfillPayload(
            backfill=None,
            user_errors=[user_error(UserErrorCode.PARTITION_NOT_FOUND, str(exc), ["id"])],
        )
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
    keys = [key_at(resolved, parent.order, space, p) for p in sorted(chosen)]
    from backfiller.planning import request_fingerprint

    key = input.idempotency_key
    new = NewBackfill(
        job_name=parent.job_name,
        selection_kind=domain.SelectionKind.KEYS,
        range_start=None,
        range_end=None,
        keys=keys,
        partitions_fingerprint=job.partitions.fingerprint(),
        first_index=0,
        total=len(keys),
        reprocess=domain.Reprocess.ALL,
        order=parent.order,
        max_concurrent_runs=parent.max_concurrent_runs,
        run_config=parent.run_config,
        tags=[(k, v) for k, v in parent.tags],
        title=f"Retry of {parent.title}" if parent.title else f"Retry of bf_{parent.id}",
        description=parent.description,
        idempotency_key=key,
        request_fingerprint=request_fingerprint(
            {"retry": parent.id, "include": sorted(i.value for i in include)}
        ),
        creator=ctx.actor,
        parent_id=parent.id,
    )
    return await _insert_child(ctx, parent, new)


async def _insert_child(
    ctx: Context, parent: BackfillRecord, new: NewBackfill
) -> RetryBackfillPayload:
    record, errors = await insert_backfill(ctx, new)
    if record is None:
        return RetryBackfillPayload(backfill=None, user_errors=errors)
    async with ctx.database.write() as session:
        await EventRepository(session).add(
            parent.id, EventKind.RETRIED, ctx.now(), ctx.actor, f"retried as bf_{record.id}"
        )
    return RetryBackfillPayload(backfill=backfill_from_record(record), user_errors=[])


# -- queries ---------------------------------------------------------------------------------


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
    query = BackfillQuery()
    if filter is not None:
        tag = None
        if filter.tag is not None:
            tag = (filter.tag.key, filter.tag.value)
        query = BackfillQuery(
            statuses=[backfill_state(s) for s in filter.statuses] if filter.statuses else None,
            job_name=filter.job,
            tag=tag,
        )
    async with ctx.database.read() as session:
        records = await BackfillRepository(session).page(query, limit + 1, before_id)
    page = records[:limit]
    edges = [
        BackfillEdge(cursor=encode_cursor("bf", r.id), node=backfill_from_record(r)) for r in page
    ]
    return BackfillConnection(
        edges=edges,
        page_info=page_info(edges, len(records) > limit, after),
    )


__all__ = [
    "cancel_backfill",
    "get_backfill",
    "keys_between",
    "launch_backfill",
    "list_backfills",
    "pause_backfill",
    "preview_backfill",
    "resume_backfill",
    "retry_backfill",
]
