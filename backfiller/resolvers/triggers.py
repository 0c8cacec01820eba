"""The resolvers of the trigger queries and mutations.

Evaluating is the trigger service's work (:mod:`backfiller.services.trigger_evaluation`);
these resolvers call it and translate its stored records to public types
(:mod:`backfiller.resolvers.trigger_evaluations`).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from datetime import datetime

import strawberry

from backfiller.definitions.schedules import CatchUp
from backfiller.definitions.triggers import TriggerDefinition
from backfiller.ids import encode_cursor, parse_evaluation_id
from backfiller.resolvers.commands import user_error
from backfiller.resolvers.context import Info, PublicError, Services, check_page_size
from backfiller.resolvers.pages import cursor_value, page_info
from backfiller.resolvers.trigger_evaluations import evaluations_from_records
from backfiller.schema.common import UserError, UserErrorCode
from backfiller.schema.triggers import (
    EvaluateTriggerInput,
    EvaluateTriggerPayload,
    SetTriggerEnabledInput,
    SetTriggerEnabledPayload,
    Trigger,
    TriggerCatchUp,
    TriggerEvaluation,
    TriggerEvaluationConnection,
    TriggerEvaluationEdge,
)
from backfiller.services.trigger_context import client_factory_for, service_url
from backfiller.services.trigger_evaluation import (
    evaluate_trigger_now,
    get_trigger_definition,
    trigger_definitions,
)
from backfiller.services.trigger_schedules import (
    MAX_FIRE_TIMES,
    ensure_state,
    next_fire_times,
    restart_schedule,
)
from backfiller.storage.trigger_records import TriggerStateRecord
from backfiller.storage.triggers import TriggerEvaluationRepository, TriggerStateRepository


def _evaluations_loader(
    services: Services, name: str
) -> Callable[[int, str | None], Awaitable[TriggerEvaluationConnection]]:
    async def load(first: int, after: str | None) -> TriggerEvaluationConnection:
        limit = check_page_size(first, services.settings)
        before = cursor_value("tev", after)
        async with services.database.read() as session:
            records = await TriggerEvaluationRepository(session).page(name, limit + 1, before)
        nodes = await evaluations_from_records(services, records[:limit])
        edges = [
            TriggerEvaluationEdge(cursor=encode_cursor("tev", r.id), node=n)
            for r, n in zip(records[:limit], nodes, strict=True)
        ]
        return TriggerEvaluationConnection(
            edges=edges,
            page_info=page_info(edges, len(records) > limit, after),
        )

    return load


async def triggers_from_definitions(
    services: Services, definitions: Sequence[TriggerDefinition]
) -> list[Trigger]:
    names = [d.name for d in definitions]
    async with services.database.read() as session:
        states = await TriggerStateRepository(session).get_many(names)
        latest = await TriggerEvaluationRepository(session).latest(names)
    evaluations = await evaluations_from_records(services, list(latest.values()))
    last = {r.trigger_name: e for r, e in zip(latest.values(), evaluations, strict=True)}
    return [_trigger_of(services, d, states.get(d.name), last.get(d.name)) for d in definitions]


def _trigger_of(
    services: Services,
    definition: TriggerDefinition,
    state: TriggerStateRecord | None,
    last: TriggerEvaluation | None,
) -> Trigger:
    enabled = state.enabled if state is not None else True
    next_at = state.next_evaluation_at if state is not None else None
    if definition.schedule is not None and (
        state is None or state.schedule != definition.schedule.key
    ):
        # Not yet followed by a daemon (new, or its expression or zone changed): its first tick.
        next_at = definition.schedule.next_after(services.clock())
    scheduled = definition.scheduled and enabled
    return Trigger(
        name=definition.name,
        description=definition.description,
        enabled=enabled,
        interval_seconds=definition.interval_seconds,
        timeout_seconds=definition.timeout_seconds,
        next_evaluation_at=next_at if scheduled else None,
        last_evaluation=last,
        cron=definition.cron,
        timezone=definition.timezone,
        catch_up=_CATCH_UP[definition.catch_up] if definition.schedule is not None else None,
        _evaluations=_evaluations_loader(services, definition.name),
        _fire_times=_fire_times_loader(services, definition),
    )


_CATCH_UP = {
    CatchUp.LATEST: TriggerCatchUp.LATEST,
    CatchUp.ALL: TriggerCatchUp.ALL,
    CatchUp.NONE: TriggerCatchUp.NONE,
}


def _fire_times_loader(
    services: Services, definition: TriggerDefinition
) -> Callable[[int], list[datetime]]:
    def load(count: int) -> list[datetime]:
        if not 0 <= count <= MAX_FIRE_TIMES:
            raise PublicError(f"`count` must be from 0 to {MAX_FIRE_TIMES}")
        return next_fire_times(definition, services.clock(), count)

    return load


def _trigger_not_found(name: str) -> UserError:
    return user_error(UserErrorCode.TRIGGER_NOT_FOUND, f"no trigger named {name!r}", ["name"])


async def list_triggers(info: Info) -> list[Trigger]:
    services = info.context.services
    return await triggers_from_definitions(services, trigger_definitions(services))


async def get_trigger(info: Info, name: str) -> Trigger | None:
    services = info.context.services
    definition = get_trigger_definition(services, name)
    if definition is None:
        return None
    return (await triggers_from_definitions(services, [definition]))[0]


async def get_trigger_evaluation(info: Info, id: strawberry.ID) -> TriggerEvaluation | None:
    pk = parse_evaluation_id(id)
    if pk is None:
        return None
    services = info.context.services
    async with services.database.read() as session:
        record = await TriggerEvaluationRepository(session).get(pk)
    if record is None:
        return None
    return (await evaluations_from_records(services, [record]))[0]


async def evaluate_trigger(info: Info, input: EvaluateTriggerInput) -> EvaluateTriggerPayload:
    ctx = info.context
    definition = get_trigger_definition(ctx.services, input.name)
    if definition is None:
        return EvaluateTriggerPayload(evaluation=None, user_errors=[_trigger_not_found(input.name)])
    record = await evaluate_trigger_now(
        ctx.services,
        definition,
        actor=ctx.actor,
        dry_run=input.dry_run,
        # The trigger acts as whoever pressed the button: it gets the caller's token, never
        # the server's (without one, under --auth none, the server needs none).
        client_factory=client_factory_for(service_url(ctx.services.settings), ctx.token),
        team=ctx.team,
    )
    evaluation = (await evaluations_from_records(ctx.services, [record]))[0]
    return EvaluateTriggerPayload(evaluation=evaluation, user_errors=[])


async def set_trigger_enabled(
    info: Info, input: SetTriggerEnabledInput
) -> SetTriggerEnabledPayload:
    ctx = info.context
    definition = get_trigger_definition(ctx.services, input.name)
    if definition is None:
        return SetTriggerEnabledPayload(trigger=None, user_errors=[_trigger_not_found(input.name)])
    now = ctx.now()
    async with ctx.database.write() as session:
        states = TriggerStateRepository(session)
        state = await ensure_state(states, definition, now)
        if definition.schedule is not None and input.enabled and not state.enabled:
            # Ticks that passed while disabled are not caught up: start from the next one.
            await restart_schedule(states, definition, state, now)
        await states.set_enabled(definition.name, input.enabled, now)
    trigger = (await triggers_from_definitions(ctx.services, [definition]))[0]
    return SetTriggerEnabledPayload(trigger=trigger, user_errors=[])
