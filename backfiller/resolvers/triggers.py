"""Evaluating triggers, and the resolvers of the trigger queries and mutations.

An evaluation runs the user's function in a worker thread with a time limit, then sends each
:class:`BackfillRequest` it returned through the very path of ``launchBackfill``
(``command_from_input`` then ``insert_backfill``), so a request from a trigger is validated
exactly like one from any client. Every evaluation is recorded with its outcome:

- ``LAUNCHED``: every request was launched (or found by its idempotency key);
- ``SKIPPED``: the function returned a ``SkipReason`` (or an empty list);
- ``FAILED``: the function raised, ran past its limit, returned something else, or a request
  was refused (then nothing is launched when the refusal is known before launching).

A dry run validates and previews the requests, launches nothing, does not save the cursor and
writes exactly one row: its evaluation record (``dryRun: true``), so the history shows who
pressed "test" and what it would have done.

The user's traceback is logged and stored server-side (``error_traceback``); only the
exception's type and message are served.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import inspect
import logging
import os
import threading
import time
import traceback
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, assert_never, cast

import strawberry

from backfiller import domain
from backfiller.client import Client
from backfiller.config import Settings
from backfiller.definitions.requests import (
    AllPartitions,
    BackfillRequest,
    PartitionKeys,
    PartitionRange,
    plain_json,
)
from backfiller.definitions.triggers import (
    MAX_CURSOR_LENGTH,
    PartitionRunStatus,
    PartitionStatuses,
    PreviousEvaluation,
    SkipReason,
    TriggerContext,
    TriggerDefinition,
)
from backfiller.resolvers import backfills as backfill_resolvers
from backfiller.resolvers.asset_commands import target_input_of
from backfiller.resolvers.commands import LaunchCommand, command_from_input, user_error
from backfiller.resolvers.context import (
    Context,
    Info,
    Services,
    check_page_size,
)
from backfiller.resolvers.ids import encode_cursor, parse_id
from backfiller.resolvers.pages import cursor_value, page_info
from backfiller.resolvers.source import StorageSource
from backfiller.resolvers.translate import backfill_from_record
from backfiller.schema.backfills import (
    BackfillPreview,
    BackfillTarget,
    PartitionSelection,
    SkippedPartition,
)
from backfiller.schema.backfills import PartitionRange as PublicPartitionRange
from backfiller.schema.common import JSON, Tag, TagInput, UserError, UserErrorCode
from backfiller.schema.enums import BackfillOrder, Reprocess
from backfiller.schema.enums import SkipReason as PublicSkipReason
from backfiller.schema.inputs import (
    LaunchBackfillInput,
    PartitionRangeInput,
    PartitionSelectionInput,
)
from backfiller.schema.triggers import (
    EvaluateTriggerInput,
    EvaluateTriggerPayload,
    SetTriggerEnabledInput,
    SetTriggerEnabledPayload,
    Trigger,
    TriggerEvaluation,
    TriggerEvaluationConnection,
    TriggerEvaluationEdge,
    TriggerEvaluationOutcome,
    TriggerRequest,
)
from backfiller.storage.records import BackfillRecord
from backfiller.storage.repositories import BackfillRepository, PartitionStateRepository
from backfiller.storage.selections import key_space_of
from backfiller.storage.trigger_records import (
    TriggerEvaluationRecord,
    TriggerOutcome,
    TriggerStateRecord,
)
from backfiller.storage.triggers import TriggerEvaluationRepository, TriggerStateRepository

logger = logging.getLogger("backfiller.triggers")

EVALUATION_PREFIX = "tev_"
MAX_REQUESTS_PER_EVALUATION = 100
PREVIOUS_EVALUATIONS = 20
MAX_MESSAGE = 2_000


def evaluation_id(pk: int) -> str:
    return f"{EVALUATION_PREFIX}{pk}"


def parse_evaluation_id(value: str) -> int | None:
    return parse_id(value, EVALUATION_PREFIX)


# -- BackfillRequest -> the public launch input ---------------------------------------------


def input_from_request(request: BackfillRequest) -> LaunchBackfillInput:
    """The ``LaunchBackfillInput`` a client would send for ``request``."""
    selection: PartitionSelectionInput
    match request.partitions:
        case PartitionRange(start=start, end=end):
            selection = PartitionSelectionInput(range=PartitionRangeInput(start=start, end=end))
        case PartitionKeys(keys=keys):
            selection = PartitionSelectionInput(keys=list(keys))
        case AllPartitions():
            selection = PartitionSelectionInput(all=True)
        case _:
            assert_never(request.partitions)
    return LaunchBackfillInput(
        target=target_input_of(request),
        partitions=selection,
        reprocess=Reprocess(request.reprocess),
        order=BackfillOrder(request.order),
        max_concurrent_runs=request.max_concurrent_runs,
        run_config=JSON(plain_json(request.run_config)) if request.run_config is not None else None,
        tags=[TagInput(key=k, value=v) for k, v in request.tags.items()],
        title=request.title,
        description=request.description,
        idempotency_key=request.idempotency_key,
    )


# -- running the user's function -------------------------------------------------------------


@dataclass
class _Ran:
    value: object = None
    error: str | None = None
    traceback: str | None = None


_overdue: dict[str, threading.Thread] = {}
_overdue_lock = threading.Lock()


async def run_with_time_limit(
    definition: TriggerDefinition, context: TriggerContext, limit: float
) -> _Ran:
    """Run the function in its own thread; give up waiting after ``limit`` seconds.

    A Python thread cannot be killed: one that runs past its limit is abandoned (it is a
    daemon thread, and nothing it returns or sets afterwards is used). While an abandoned
    thread of a trigger is still running, the trigger is not started again (the evaluation is
    FAILED at once), so a trigger stuck for good costs one thread, not one per evaluation.
    """
    with _overdue_lock:
        overdue = _overdue.get(definition.name)
        if overdue is not None and overdue.is_alive():
            return _Ran(
                error="the previous evaluation is still running past its time limit; "
                "this one was not started"
            )
        _overdue.pop(definition.name, None)
    future: concurrent.futures.Future[object] = concurrent.futures.Future()

    def work() -> None:
        if not future.set_running_or_notify_cancel():
            return
        try:
            result: object = definition.fn(context)
            if inspect.isawaitable(result):
                result = asyncio.run(_awaited(result))
        except Exception as exc:
            future.set_exception(exc)
        except BaseException as exc:  # SystemExit, KeyboardInterrupt: not the service's
            wrapped = RuntimeError(f"the trigger raised {type(exc).__name__}")
            wrapped.__cause__ = exc
            future.set_exception(wrapped)
        else:
            future.set_result(result)
        finally:
            try:
                context.close()
            except Exception:
                logger.exception("closing the client of trigger %s", definition.name)

    thread = threading.Thread(target=work, name=f"trigger-{definition.name}", daemon=True)
    thread.start()
    try:
        value = await asyncio.wait_for(asyncio.wrap_future(future), limit)
    except TimeoutError:
        with _overdue_lock:
            _overdue[definition.name] = thread
        logger.warning("trigger %s ran past its time limit of %g s", definition.name, limit)
        return _Ran(error=f"the trigger ran past its time limit of {limit:g} s")
    except Exception as exc:
        text = "".join(traceback.format_exception(exc))
        logger.warning("trigger %s raised:\n%s", definition.name, text)
        return _Ran(error=_message_of(exc), traceback=text)
    return _Ran(value=value)


async def _awaited(result: Awaitable[object]) -> object:
    return await result


def _message_of(exc: BaseException) -> str:
    text = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
    return text[:MAX_MESSAGE]


def _requests_of(value: object) -> list[BackfillRequest] | SkipReason | str:
    """The requests a trigger returned, its skip reason, or why its answer is invalid."""
    if isinstance(value, SkipReason):
        return value
    if isinstance(value, BackfillRequest):
        return [value]
    if isinstance(value, list | tuple) and all(isinstance(v, BackfillRequest) for v in value):
        if len(value) > MAX_REQUESTS_PER_EVALUATION:
            return (
                f"the trigger returned {len(value)} requests; at most "
                f"{MAX_REQUESTS_PER_EVALUATION} per evaluation"
            )
        return list(value)
    return (
        f"the trigger returned {type(value).__name__}; return a BackfillRequest, a list of "
        "them, or a SkipReason"
    )


# -- reading for the trigger's context --------------------------------------------------------


def _run_status(state: domain.RunState) -> PartitionRunStatus:
    match state:
        case domain.RunState.QUEUED:
            return "QUEUED"
        case domain.RunState.RUNNING:
            return "RUNNING"
        case domain.RunState.SUCCESS:
            return "SUCCEEDED"
        case domain.RunState.FAILED:
            return "FAILED"
        case domain.RunState.CANCELED:
            return "CANCELED"
        case _:
            assert_never(state)


async def read_partition_statuses(services: Services, job_name: str) -> PartitionStatuses:
    """Every partition of a job and the outcome of its latest run, from storage."""
    job = services.definitions.get_job(job_name)
    if job is None:
        raise LookupError(f"no job named {job_name!r}")
    space = await key_space_of(job.partitions, services.clock(), services.database)
    async with services.database.read() as session:
        latest = await PartitionStateRepository(session).all_of_job(job_name)
    return PartitionStatuses(
        job=job_name,
        keys=tuple(space.keys(0, len(space))),
        latest={k: _run_status(s) for k, s in latest.items()},
    )


def service_url(settings: Settings) -> str:
    """Where this server answers, for the clients handed to the triggers it evaluates."""
    if settings.public_url:
        return settings.public_url
    host = "127.0.0.1" if settings.host in ("0.0.0.0", "::", "") else settings.host
    return f"http://{host}:{settings.port}"


def client_factory_for(url: str | None, token: str | None) -> Callable[[], Client] | None:
    """What builds ``context.client`` for a trigger: a client of ``url`` (None: no client)."""
    if not url:
        return None
    base = url

    def build() -> Client:
        return Client(base, token=token)

    return build


def _outcome_name(outcome: TriggerOutcome) -> Literal["LAUNCHED", "SKIPPED", "FAILED"]:
    match outcome:
        case TriggerOutcome.LAUNCHED:
            return "LAUNCHED"
        case TriggerOutcome.SKIPPED:
            return "SKIPPED"
        case TriggerOutcome.FAILED:
            return "FAILED"
        case _:
            assert_never(outcome)


def _previous(record: TriggerEvaluationRecord) -> PreviousEvaluation:
    return PreviousEvaluation(
        outcome=_outcome_name(record.outcome),
        evaluated_at=record.evaluated_at,
        dry_run=record.dry_run,
        skip_reason=record.skip_reason,
        error_message=record.error_message,
        backfill_ids=tuple(f"bf_{i}" for i in record.backfill_ids),
    )


# -- evaluating --------------------------------------------------------------------------------


@dataclass
class _Evaluation:
    outcome: TriggerOutcome = TriggerOutcome.FAILED
    skip_reason: str | None = None
    error_message: str | None = None
    error_traceback: str | None = None
    backfill_ids: list[int] = field(default_factory=list)
    requests: list[dict[str, Any]] = field(default_factory=list)


@dataclass(frozen=True)
class _ContextOnly:
    """What the launch resolvers read from their ``info``: only the context."""

    context: Context


def _error_json(error: UserError) -> dict[str, Any]:
    return {"code": error.code.name, "field": error.field, "message": error.message}


def _preview_json(preview: BackfillPreview) -> dict[str, Any]:
    return {
        "job": preview.job,
        "total": preview.total,
        "runs": preview.runs,
        "skipped": preview.skipped,
        "firstPartitions": list(preview.first_partitions),
        "skippedPartitions": [
            {"key": s.key, "reason": s.reason.name} for s in preview.skipped_partitions
        ],
    }


def _refusal(index: int, total: int, errors: Sequence[UserError]) -> str:
    listed = "; ".join(
        f"{e.code.name} at {'.'.join(e.field) if e.field else 'input'}: {e.message}" for e in errors
    )
    return f"request {index + 1} of {total} was refused: {listed}"[:MAX_MESSAGE]


async def _launch(
    ctx: Context,
    name: str,
    requests: list[BackfillRequest],
    dry_run: bool,
    evaluation: _Evaluation,
) -> None:
    """Validate every request, then launch them all (or preview them, on a dry run)."""
    creator = f"trigger:{name}"
    inputs = [input_from_request(r) for r in requests]
    commands: list[LaunchCommand | None] = []
    refusals: list[str] = []
    for i, (request, launch_input) in enumerate(zip(requests, inputs, strict=True)):
        entry: dict[str, Any] = {
            "input": request.as_graphql_input(),
            "preview": None,
            "errors": [],
            "backfillId": None,
        }
        evaluation.requests.append(entry)
        validated = await command_from_input(ctx, launch_input, creator=creator)
        if isinstance(validated, LaunchCommand):
            commands.append(validated)
        else:
            commands.append(None)
            entry["errors"] = [_error_json(e) for e in validated]
            refusals.append(_refusal(i, len(requests), validated))
    if refusals:
        evaluation.outcome = TriggerOutcome.FAILED
        evaluation.error_message = "; ".join(refusals)[:MAX_MESSAGE]
        return
    if dry_run:
        for entry, launch_input in zip(evaluation.requests, inputs, strict=True):
            payload = await backfill_resolvers.preview_backfill(
                cast(Info, _ContextOnly(ctx)), launch_input
            )
            if payload.preview is not None:
                entry["preview"] = _preview_json(payload.preview)
            entry["errors"] = [_error_json(e) for e in payload.user_errors]
        evaluation.outcome = TriggerOutcome.LAUNCHED
        return
    for i, (entry, launch) in enumerate(zip(evaluation.requests, commands, strict=True)):
        assert launch is not None
        record, errors = await backfill_resolvers.insert_backfill(ctx, launch.new)
        if record is None:
            entry["errors"] = [_error_json(e) for e in errors]
            refusals.append(_refusal(i, len(requests), errors))
            continue
        entry["backfillId"] = record.id
        evaluation.backfill_ids.append(record.id)
    if refusals:
        evaluation.outcome = TriggerOutcome.FAILED
        evaluation.error_message = "; ".join(refusals)[:MAX_MESSAGE]
    else:
        evaluation.outcome = TriggerOutcome.LAUNCHED


async def evaluate_trigger_now(
    services: Services,
    definition: TriggerDefinition,
    *,
    actor: str | None,
    dry_run: bool,
    client_factory: Callable[[], Client] | None = None,
) -> TriggerEvaluationRecord:
    """Evaluate one trigger, launch what it returns (unless ``dry_run``), record it.

    Never raises for the user's faults: a failing trigger is an evaluation with outcome
    FAILED. Used by ``evaluateTrigger`` and by the daemon's interval tick.

    Args:
        client_factory: Builds the client of ``context.client``; None when this process
            does not know where the service is (the function then gets a clear error).
    """
    name = definition.name
    async with services.database.read() as session:
        state = await TriggerStateRepository(session).get(name)
        previous = await TriggerEvaluationRepository(session).page(name, PREVIOUS_EVALUATIONS, None)
    read_cursor = state.cursor if state else None
    read_version = state.cursor_version if state else 0
    started_at = services.clock()
    started = time.monotonic()
    loop = asyncio.get_running_loop()

    def partition_reader(job: str) -> PartitionStatuses:
        found = asyncio.run_coroutine_threadsafe(read_partition_statuses(services, job), loop)
        return found.result(timeout=definition.timeout_seconds)

    context = TriggerContext(
        trigger_name=name,
        now=started_at,
        cursor=read_cursor,
        previous_evaluations=[_previous(r) for r in previous],
        dry_run=dry_run,
        partition_reader=partition_reader,
        client_factory=client_factory,
    )
    ran = await run_with_time_limit(definition, context, definition.timeout_seconds)
    evaluation = _Evaluation()
    cursor = context.cursor
    if ran.error is not None:
        evaluation.error_message = ran.error
        evaluation.error_traceback = ran.traceback
    elif cursor is not None and (not isinstance(cursor, str) or len(cursor) > MAX_CURSOR_LENGTH):
        evaluation.error_message = f"the cursor must be a string of at most {MAX_CURSOR_LENGTH}"
    else:
        found = _requests_of(ran.value)
        if isinstance(found, str):
            evaluation.error_message = found
        elif isinstance(found, SkipReason):
            evaluation.outcome = TriggerOutcome.SKIPPED
            evaluation.skip_reason = found.message[:MAX_MESSAGE] or "skipped"
        elif not found:
            evaluation.outcome = TriggerOutcome.SKIPPED
            evaluation.skip_reason = "the trigger returned no backfill request"
        else:
            ctx = Context(
                services=services,
                source=StorageSource(services),
                actor=actor,
                request_id=f"trigger:{name}",
            )
            await _launch(ctx, name, found, dry_run, evaluation)
    duration = round(time.monotonic() - started, 6)
    evaluated_at = services.clock()
    async with services.database.write() as session:
        if not dry_run:
            states = TriggerStateRepository(session)
            await states.ensure(name, definition.interval_seconds, evaluated_at)
            await states.mark_evaluated(name, evaluated_at)
            if evaluation.outcome is not TriggerOutcome.FAILED and cursor != read_cursor:
                saved = await states.save_cursor(name, read_version, cursor, evaluated_at)
                if not saved:
                    logger.warning(
                        "trigger %s: another evaluation saved the cursor first; this "
                        "evaluation's cursor %r was dropped",
                        name,
                        cursor,
                    )
        record = await TriggerEvaluationRepository(session).add(
            trigger_name=name,
            outcome=evaluation.outcome,
            started_at=started_at,
            evaluated_at=evaluated_at,
            duration_seconds=duration,
            actor=actor,
            dry_run=dry_run,
            skip_reason=evaluation.skip_reason,
            error_message=evaluation.error_message,
            error_traceback=evaluation.error_traceback,
            backfill_ids=evaluation.backfill_ids,
            requests=evaluation.requests,
        )
    logger.info(
        "trigger %s evaluated by %s: %s%s",
        name,
        actor or "anonymous",
        evaluation.outcome.value,
        " (dry run)" if dry_run else "",
    )
    return record


# -- records -> public types ------------------------------------------------------------------


def evaluation_outcome(outcome: TriggerOutcome) -> TriggerEvaluationOutcome:
    match outcome:
        case TriggerOutcome.LAUNCHED:
            return TriggerEvaluationOutcome.LAUNCHED
        case TriggerOutcome.SKIPPED:
            return TriggerEvaluationOutcome.SKIPPED
        case TriggerOutcome.FAILED:
            return TriggerEvaluationOutcome.FAILED
        case _:
            assert_never(outcome)


def _selection_of(stored: dict[str, Any]) -> PartitionSelection:
    if stored.get("range"):
        r = stored["range"]
        return PartitionSelection(range=PublicPartitionRange(start=r["start"], end=r["end"]))
    if stored.get("keys") is not None:
        return PartitionSelection(keys=list(stored["keys"]))
    return PartitionSelection(all=True)


def _preview_of(stored: dict[str, Any] | None) -> BackfillPreview | None:
    if stored is None:
        return None
    return BackfillPreview(
        job=stored["job"],
        total=stored["total"],
        runs=stored["runs"],
        skipped=stored["skipped"],
        first_partitions=list(stored["firstPartitions"]),
        skipped_partitions=[
            SkippedPartition(key=s["key"], reason=PublicSkipReason[s["reason"]])
            for s in stored["skippedPartitions"]
        ],
    )


def _user_error_of(stored: dict[str, Any]) -> UserError:
    return user_error(UserErrorCode[stored["code"]], stored["message"], stored.get("field"))


def _request_of(entry: dict[str, Any], backfills: dict[int, BackfillRecord]) -> TriggerRequest:
    given = entry["input"]
    config = given.get("runConfig")
    launched = entry.get("backfillId")
    record = backfills.get(launched) if launched is not None else None
    return TriggerRequest(
        target=BackfillTarget(job=given["target"]["job"]),
        partition_selection=_selection_of(given["partitions"]),
        reprocess=Reprocess(given.get("reprocess") or "MISSING"),
        order=BackfillOrder(given.get("order") or "OLDEST_FIRST"),
        max_concurrent_runs=given.get("maxConcurrentRuns"),
        run_config=JSON(config) if config is not None else None,
        tags=[Tag(key=t["key"], value=t["value"]) for t in given.get("tags") or []],
        title=given.get("title"),
        description=given.get("description"),
        idempotency_key=given.get("idempotencyKey"),
        preview=_preview_of(entry.get("preview")),
        backfill=backfill_from_record(record) if record is not None else None,
        user_errors=[_user_error_of(e) for e in entry.get("errors") or []],
    )


def evaluation_from_record(
    record: TriggerEvaluationRecord, backfills: dict[int, BackfillRecord]
) -> TriggerEvaluation:
    return TriggerEvaluation(
        id=strawberry.ID(evaluation_id(record.id)),
        trigger=record.trigger_name,
        outcome=evaluation_outcome(record.outcome),
        skip_reason=record.skip_reason,
        error_message=record.error_message,
        duration_seconds=record.duration_seconds,
        actor=record.actor,
        dry_run=record.dry_run,
        evaluated_at=record.evaluated_at,
        backfills=[
            backfill_from_record(backfills[i]) for i in record.backfill_ids if i in backfills
        ],
        requests=[_request_of(e, backfills) for e in record.requests],
    )


async def evaluations_from_records(
    services: Services, records: Sequence[TriggerEvaluationRecord]
) -> list[TriggerEvaluation]:
    """Public evaluations, with the backfills they launched loaded in one query."""
    ids = {i for r in records for i in r.backfill_ids}
    async with services.database.read() as session:
        backfills = await BackfillRepository(session).get_many(ids)
    return [evaluation_from_record(r, backfills) for r in records]


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


def trigger_definitions(services: Services) -> list[TriggerDefinition]:
    found = [t for t in services.definitions.triggers if isinstance(t, TriggerDefinition)]
    return sorted(found, key=lambda t: t.name)


def get_definition(services: Services, name: str) -> TriggerDefinition | None:
    found = services.definitions.get_trigger(name)
    return found if isinstance(found, TriggerDefinition) else None


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
    scheduled = definition.interval_seconds is not None and enabled and state is not None
    return Trigger(
        name=definition.name,
        description=definition.description,
        enabled=enabled,
        interval_seconds=definition.interval_seconds,
        timeout_seconds=definition.timeout_seconds,
        next_evaluation_at=state.next_evaluation_at if scheduled and state else None,
        last_evaluation=last,
        _evaluations=_evaluations_loader(services, definition.name),
    )


def _trigger_not_found(name: str) -> UserError:
    return user_error(UserErrorCode.TRIGGER_NOT_FOUND, f"no trigger named {name!r}", ["name"])


# -- resolvers ---------------------------------------------------------------------------------


async def list_triggers(info: Info) -> list[Trigger]:
    services = info.context.services
    return await triggers_from_definitions(services, trigger_definitions(services))


async def get_trigger(info: Info, name: str) -> Trigger | None:
    services = info.context.services
    definition = get_definition(services, name)
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
    definition = get_definition(ctx.services, input.name)
    if definition is None:
        return EvaluateTriggerPayload(evaluation=None, user_errors=[_trigger_not_found(input.name)])
    record = await evaluate_trigger_now(
        ctx.services,
        definition,
        actor=ctx.actor,
        dry_run=input.dry_run,
        # The trigger acts as whoever pressed the button: it gets the caller's token.
        client_factory=client_factory_for(
            service_url(ctx.services.settings),
            ctx.token or os.environ.get("BACKFILLER_TOKEN") or None,
        ),
    )
    evaluation = (await evaluations_from_records(ctx.services, [record]))[0]
    return EvaluateTriggerPayload(evaluation=evaluation, user_errors=[])


async def set_trigger_enabled(
    info: Info, input: SetTriggerEnabledInput
) -> SetTriggerEnabledPayload:
    ctx = info.context
    definition = get_definition(ctx.services, input.name)
    if definition is None:
        return SetTriggerEnabledPayload(trigger=None, user_errors=[_trigger_not_found(input.name)])
    now = ctx.now()
    async with ctx.database.write() as session:
        states = TriggerStateRepository(session)
        await states.ensure(definition.name, definition.interval_seconds, now)
        await states.set_enabled(definition.name, input.enabled, now)
    trigger = (await triggers_from_definitions(ctx.services, [definition]))[0]
    return SetTriggerEnabledPayload(trigger=trigger, user_errors=[])
