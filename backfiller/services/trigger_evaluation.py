"""Evaluating a trigger: run its function, launch what it returns, record the evaluation.

Each :class:`BackfillRequest` a trigger returns goes through the launch service
(:mod:`backfiller.services.launching`), the path of ``launchBackfill``, so a request from a
trigger is validated exactly like one from any client. Every evaluation is recorded:

- ``LAUNCHED``: every request was launched (or found by its idempotency key);
- ``SKIPPED``: the function returned a ``SkipReason`` (or an empty list);
- ``FAILED``: the function raised, ran past its limit, returned something else, or a request
  was refused (then nothing is launched when the refusal is known before launching).

A dry run validates and previews the requests, launches nothing, does not save the cursor and
writes exactly one row: its evaluation record, so the history shows who pressed "test" and
what it would have done. The user's traceback is logged and stored (``error_traceback``);
only the exception's type and message are served.

Used by ``evaluateTrigger`` (the resolvers) and by the daemon's schedule tick; it imports no
GraphQL and returns the stored record.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, assert_never

from backfiller import domain
from backfiller.definitions.requests import (
    AllPartitions,
    BackfillRequest,
    PartitionKeys,
    PartitionRange,
    plain_json,
)
from backfiller.definitions.triggers import (
    MAX_CURSOR_LENGTH,
    PartitionStatuses,
    SkipReason,
    TriggerContext,
    TriggerDefinition,
)
from backfiller.planning import Selection
from backfiller.services.backend import Backend
from backfiller.services.launch_types import (
    AssetRequest,
    LaunchPlan,
    LaunchProblem,
    LaunchRequest,
)
from backfiller.services.launching import (
    Launched,
    create_backfill,
    preview_launch,
    validate_launch,
)
from backfiller.services.trigger_context import previous_evaluation, read_partition_statuses
from backfiller.services.trigger_requests import EvaluatedRequest, to_json
from backfiller.services.trigger_runner import MAX_MESSAGE, Ran, run_with_time_limit
from backfiller.services.trigger_schedules import ensure_state
from backfiller.storage.trigger_records import TriggerEvaluationRecord, TriggerOutcome
from backfiller.storage.triggers import TriggerEvaluationRepository, TriggerStateRepository

if TYPE_CHECKING:
    from backfiller.client import Client  # httpx: loaded when a trigger asks for its client

logger = logging.getLogger("backfiller.triggers")

MAX_REQUESTS_PER_EVALUATION = 100
PREVIOUS_EVALUATIONS = 20

_REPROCESS = {
    "MISSING": domain.Reprocess.MISSING,
    "FAILED_AND_MISSING": domain.Reprocess.FAILED_AND_MISSING,
    "ALL": domain.Reprocess.ALL,
}
_ORDER = {"OLDEST_FIRST": domain.Order.OLDEST_FIRST, "NEWEST_FIRST": domain.Order.NEWEST_FIRST}


def launch_request_of(request: BackfillRequest) -> LaunchRequest:
    """The private launch request of a :class:`BackfillRequest` (the same fields)."""
    selection: Selection
    match request.partitions:
        case PartitionRange(start=start, end=end):
            selection = Selection(domain.SelectionKind.RANGE, start, end)
        case PartitionKeys(keys=keys):
            selection = Selection(domain.SelectionKind.KEYS, keys=tuple(keys))
        case AllPartitions():
            selection = Selection(domain.SelectionKind.ALL)
        case _:
            assert_never(request.partitions)
    config = plain_json(request.run_config) if request.run_config is not None else None
    return LaunchRequest(
        job=request.job,
        selection=selection,
        reprocess=_REPROCESS[request.reprocess],
        order=_ORDER[request.order],
        max_concurrent_runs=request.max_concurrent_runs,
        run_config=config,
        tags=tuple(request.tags.items()),
        title=request.title,
        description=request.description,
        idempotency_key=request.idempotency_key,
        priority=request.priority,
        assets=(
            AssetRequest(request.assets.names, request.assets.upstream, request.assets.downstream)
            if request.assets is not None
            else None
        ),
    )


def trigger_definitions(backend: Backend) -> list[TriggerDefinition]:
    """The triggers of the definitions, by name."""
    found = [t for t in backend.definitions.triggers if isinstance(t, TriggerDefinition)]
    return sorted(found, key=lambda t: t.name)


def get_trigger_definition(backend: Backend, name: str) -> TriggerDefinition | None:
    found = backend.definitions.get_trigger(name)
    return found if isinstance(found, TriggerDefinition) else None


@dataclass(frozen=True, slots=True)
class InvalidAnswer:
    """Why what a trigger returned is not an answer it may give."""

    message: str


def requests_of(value: object) -> list[BackfillRequest] | SkipReason | InvalidAnswer:
    """The requests a trigger returned, its skip reason, or why its answer is invalid."""
    if isinstance(value, SkipReason):
        return value
    if isinstance(value, BackfillRequest):
        return [value]
    if isinstance(value, list | tuple) and all(isinstance(v, BackfillRequest) for v in value):
        if len(value) > MAX_REQUESTS_PER_EVALUATION:
            return InvalidAnswer(
                f"the trigger returned {len(value)} requests; at most "
                f"{MAX_REQUESTS_PER_EVALUATION} per evaluation"
            )
        return list(value)
    return InvalidAnswer(
        f"the trigger returned {type(value).__name__}; return a BackfillRequest, a list of "
        "them, or a SkipReason"
    )


@dataclass
class _Evaluation:
    outcome: TriggerOutcome = TriggerOutcome.FAILED
    skip_reason: str | None = None
    error_message: str | None = None
    error_traceback: str | None = None
    requests: list[EvaluatedRequest] = field(default_factory=list)

    def refuse(self, refusals: list[str]) -> None:
        self.outcome = TriggerOutcome.FAILED
        self.error_message = "; ".join(refusals)[:MAX_MESSAGE]

    @property
    def backfill_ids(self) -> list[int]:
        return [r.backfill_id for r in self.requests if r.backfill_id is not None]


def _refusal(index: int, total: int, problems: tuple[LaunchProblem, ...]) -> str:
    """The problems of one request, named after ``BackfillRequest``'s fields."""
    listed = "; ".join(
        f"{p.code.name} at {'.'.join(p.field) if p.field else 'input'}: {p.message}"
        for p in problems
    )
    return f"request {index + 1} of {total} was refused: {listed}"[:MAX_MESSAGE]


async def _launch(
    backend: Backend,
    name: str,
    asked: list[BackfillRequest],
    dry_run: bool,
    evaluation: _Evaluation,
    team: str | None = None,
) -> None:
    """Validate every request, then launch them all (or preview them, on a dry run)."""
    plans: list[LaunchPlan] = []
    refusals: list[str] = []
    for i, request in enumerate(asked):
        launch = launch_request_of(request)
        plan = await validate_launch(backend, launch, creator=f"trigger:{name}", team=team)
        if isinstance(plan, LaunchPlan):
            plans.append(plan)
            evaluation.requests.append(EvaluatedRequest(launch))
        else:
            evaluation.requests.append(EvaluatedRequest(launch, problems=tuple(plan)))
            refusals.append(_refusal(i, len(asked), tuple(plan)))
    if refusals:
        evaluation.refuse(refusals)
        return
    for i, (entry, plan) in enumerate(zip(evaluation.requests, plans, strict=True)):
        if dry_run:
            preview = await preview_launch(backend, plan)
            evaluation.requests[i] = EvaluatedRequest(entry.request, preview=preview)
            continue
        launched = await create_backfill(backend, plan.new)
        if isinstance(launched, Launched):
            evaluation.requests[i] = EvaluatedRequest(entry.request, backfill_id=launched.record.id)
        else:
            evaluation.requests[i] = EvaluatedRequest(entry.request, problems=(launched,))
            refusals.append(_refusal(i, len(asked), (launched,)))
    if refusals:
        evaluation.refuse(refusals)
    else:
        evaluation.outcome = TriggerOutcome.LAUNCHED


async def _judge(
    backend: Backend,
    definition: TriggerDefinition,
    ran: Ran,
    cursor: object,
    dry_run: bool,
    team: str | None = None,
) -> _Evaluation:
    """What the function's answer means, launching what it asked for."""
    evaluation = _Evaluation()
    if ran.error is not None:
        evaluation.error_message = ran.error
        evaluation.error_traceback = ran.traceback
    elif cursor is not None and (not isinstance(cursor, str) or len(cursor) > MAX_CURSOR_LENGTH):
        evaluation.error_message = f"the cursor must be a string of at most {MAX_CURSOR_LENGTH}"
    else:
        found = requests_of(ran.value)
        if isinstance(found, InvalidAnswer):
            evaluation.error_message = found.message
        elif isinstance(found, SkipReason):
            evaluation.outcome = TriggerOutcome.SKIPPED
            evaluation.skip_reason = found.message[:MAX_MESSAGE] or "skipped"
        elif not found:
            evaluation.outcome = TriggerOutcome.SKIPPED
            evaluation.skip_reason = "the trigger returned no backfill request"
        else:
            await _launch(backend, definition.name, found, dry_run, evaluation, team)
    return evaluation


@dataclass(frozen=True, slots=True)
class _Started:
    at: datetime
    monotonic: float
    cursor: str | None
    cursor_version: int
    scheduled_at: datetime | None


async def _record(
    backend: Backend,
    definition: TriggerDefinition,
    started: _Started,
    evaluation: _Evaluation,
    cursor: str | None,
    *,
    actor: str | None,
    dry_run: bool,
) -> TriggerEvaluationRecord:
    """Store the evaluation and, unless a dry run, the trigger's schedule and cursor."""
    name = definition.name
    duration = round(time.monotonic() - started.monotonic, 6)
    evaluated_at = backend.clock()
    async with backend.database.write() as session:
        if not dry_run:
            states = TriggerStateRepository(session)
            await ensure_state(states, definition, evaluated_at)
            await states.mark_evaluated(name, evaluated_at)
            if evaluation.outcome is not TriggerOutcome.FAILED and cursor != started.cursor:
                saved = await states.save_cursor(name, started.cursor_version, cursor, evaluated_at)
                if not saved:
                    logger.warning(
                        "trigger %s: another evaluation saved the cursor first; this "
                        "evaluation's cursor %r was dropped",
                        name,
                        cursor,
                    )
        return await TriggerEvaluationRepository(session).add(
            trigger_name=name,
            outcome=evaluation.outcome,
            started_at=started.at,
            evaluated_at=evaluated_at,
            duration_seconds=duration,
            actor=actor,
            dry_run=dry_run,
            scheduled_at=started.scheduled_at,
            skip_reason=evaluation.skip_reason,
            error_message=evaluation.error_message,
            error_traceback=evaluation.error_traceback,
            backfill_ids=evaluation.backfill_ids,
            requests=[to_json(r) for r in evaluation.requests],
        )


async def evaluate_trigger_now(
    backend: Backend,
    definition: TriggerDefinition,
    *,
    actor: str | None,
    dry_run: bool,
    client_factory: Callable[[], Client] | None = None,
    scheduled_at: datetime | None = None,
    team: str | None = None,
) -> TriggerEvaluationRecord:
    """Evaluate one trigger, launch what it returns (unless ``dry_run``), record it.

    Its launches act for the trigger's team, else for ``team`` (the evaluator's).

    Never raises for the user's faults: a failing trigger is an evaluation with outcome
    FAILED.

    Args:
        client_factory: Builds the client of ``context.client``; None when this process
            does not know where the service is (the function then gets a clear error).
        scheduled_at: The tick the daemon evaluates it for (recorded, and given to the
            function as ``context.scheduled_time``); None on demand.
    """
    started, context = await _context_of(backend, definition, dry_run, client_factory, scheduled_at)
    ran = await run_with_time_limit(definition, context, definition.timeout_seconds)
    cursor = context.cursor
    team = definition.team if definition.team is not None else team
    evaluation = await _judge(backend, definition, ran, cursor, dry_run, team)
    record = await _record(
        backend,
        definition,
        started,
        evaluation,
        cursor if isinstance(cursor, str) else None,
        actor=actor,
        dry_run=dry_run,
    )
    logger.info(
        "trigger %s evaluated by %s: %s%s",
        definition.name,
        actor or "anonymous",
        evaluation.outcome.value,
        " (dry run)" if dry_run else "",
    )
    return record


async def _context_of(
    backend: Backend,
    definition: TriggerDefinition,
    dry_run: bool,
    client_factory: Callable[[], Client] | None,
    scheduled_at: datetime | None,
) -> tuple[_Started, TriggerContext]:
    """Read the trigger's cursor and previous evaluations; the context its function gets."""
    name = definition.name
    async with backend.database.read() as session:
        state = await TriggerStateRepository(session).get(name)
        previous = await TriggerEvaluationRepository(session).page(name, PREVIOUS_EVALUATIONS, None)
    started = _Started(
        at=backend.clock(),
        monotonic=time.monotonic(),
        cursor=state.cursor if state else None,
        cursor_version=state.cursor_version if state else 0,
        scheduled_at=scheduled_at,
    )
    loop = asyncio.get_running_loop()

    def partition_reader(job: str) -> PartitionStatuses:
        # Called from the trigger's thread: the read runs on this event loop.
        found = asyncio.run_coroutine_threadsafe(read_partition_statuses(backend, job), loop)
        return found.result(timeout=definition.timeout_seconds)

    context = TriggerContext(
        trigger_name=name,
        now=started.at,
        cursor=started.cursor,
        previous_evaluations=[previous_evaluation(r) for r in previous],
        dry_run=dry_run,
        partition_reader=partition_reader,
        client_factory=client_factory,
        scheduled_time=scheduled_at,
        timezone=definition.timezone or "UTC",
    )
    return started, context


__all__ = [
    "evaluate_trigger_now",
    "get_trigger_definition",
    "launch_request_of",
    "requests_of",
    "trigger_definitions",
]
