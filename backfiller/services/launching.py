"""Launching a backfill: validate a request, preview it, create it. The one launch path.

``launchBackfill``, ``previewBackfill``, ``retryBackfill``, REST (which runs those mutations)
and trigger evaluations (from the API or the daemon) all come here, so a request is validated
the same way whoever sends it, and exactly once. Everything is private: the request, the
problems (``ProblemCode``, with field paths named after :class:`LaunchRequest`'s fields) and
the preview (``launch_types``). A request for assets goes on to ``asset_launching``. The
resolvers translate the public input in and the results out.
"""

from __future__ import annotations

from dataclasses import dataclass

from backfiller import domain
from backfiller.ids import backfill_id
from backfiller.planning import (
    SelectionProblem,
    key_at,
    position_of,
    ranged_run_count,
    resolve_selection,
)
from backfiller.services.asset_launching import preview_asset_launch, validate_asset_launch
from backfiller.services.backend import Backend
from backfiller.services.launch_checks import scalar_problems
from backfiller.services.launch_types import (
    PREVIEW_LISTED,
    LaunchPlan,
    LaunchPreview,
    LaunchProblem,
    LaunchRequest,
    ProblemCode,
    new_backfill,
    problem,
    selection_problem,
)
from backfiller.services.selections import key_space_of
from backfiller.storage.errors import IdempotencyConflict
from backfiller.storage.execution.waits import ActiveRun, WaitsRepository
from backfiller.storage.launches import AuditOf, Launch, NewBackfill, write_launches
from backfiller.storage.records import BackfillRecord
from backfiller.storage.repositories import BackfillRepository, PartitionStateRepository

LAUNCH_ATTEMPTS = 3


async def validate_launch(
    backend: Backend,
    request: LaunchRequest,
    *,
    creator: str | None,
    team: str | None = None,
    parent_id: int | None = None,
) -> LaunchPlan | list[LaunchProblem]:
    """Check ``request`` against the definitions and the database; plan its insert (acting
    for ``team``, the launcher's)."""
    if request.assets is not None:
        return await validate_asset_launch(
            backend, request, creator=creator, team=team, parent_id=parent_id
        )
    problems = scalar_problems(request)
    job = backend.definitions.get_job(request.job) if request.job else None
    if job is None:
        message = f"no job named {request.job!r}" if request.job else "a target job is required"
        return [problem(ProblemCode.JOB_NOT_FOUND, message, "job"), *problems]
    if not problems:
        config = request.run_config if request.run_config is not None else {}
        for path, message in job.config.errors(config):
            problems.append(problem(ProblemCode.INVALID_RUN_CONFIG, message, "run_config", *path))
    if problems:
        return problems
    space = await key_space_of(job.partitions, backend.clock(), backend.database)
    try:
        resolved = resolve_selection(request.selection, job.partitions, space)
    except SelectionProblem as found:
        return [selection_problem(found)]
    cap = backend.settings.max_partitions_per_backfill
    if resolved.total > cap:
        message = (
            f"the selection has {resolved.total} partitions; this server allows "
            f"at most {cap} per backfill"
        )
        return [problem(ProblemCode.RANGE_TOO_LARGE, message, "partitions")]
    new = new_backfill(
        request,
        job=job,
        partitions_fingerprint=job.partitions.fingerprint(),
        first_index=resolved.first_index,
        total=resolved.total,
        creator=creator,
        team=team,
        parent_id=parent_id,
    )
    return LaunchPlan(job, space, resolved, new)


async def preview_launch(backend: Backend, plan: LaunchPlan) -> LaunchPreview:
    """What launching ``plan`` would run and skip, reading the partitions' history."""
    if plan.assets is not None:
        return await preview_asset_launch(backend, plan)
    resolved, space, new = plan.resolved, plan.space, plan.new
    skipped: dict[int, domain.SkipReason] = {}
    async with backend.database.read() as session:
        history: dict[str, domain.RunState] = {}
        if new.reprocess is not domain.Reprocess.ALL:
            history = await PartitionStateRepository(session).all_of_job(
                new.job_name,
                [domain.RunState.SUCCESS, domain.RunState.FAILED, domain.RunState.SKIPPED],
            )
        active = await WaitsRepository(session).active_runs(new.job_name)
    for key, state in history.items():
        reason = domain.skip_reason_for(new.reprocess, state)
        if reason is None:
            continue
        position = position_of(resolved, new.order, space, key)
        if position is not None:
            skipped[position] = reason
    waiting = _waiting_within(plan, active, skipped)
    first: list[str] = []
    position = 0
    while len(first) < PREVIEW_LISTED and position < resolved.total:
        if position not in skipped:
            first.append(key_at(resolved, new.order, space, position))
        position += 1
    listed = sorted(skipped.items())[:PREVIEW_LISTED]
    return LaunchPreview(
        job=new.job_name,
        total=resolved.total,
        runs=resolved.total - len(skipped),
        skipped=len(skipped),
        first_partitions=tuple(first),
        skipped_partitions=tuple((key_at(resolved, new.order, space, p), r) for p, r in listed),
        ranged_runs=(
            ranged_run_count(resolved, new.order, space, skipped, policy.partitions_per_run)
            if (policy := plan.job.backfill_policy) is not None
            else None
        ),
        waiting=len(waiting),
        waiting_partitions=tuple((run.partition_key, run) for _, run in waiting[:PREVIEW_LISTED]),
    )


def _waiting_within(
    plan: LaunchPlan, active: dict[str, ActiveRun], skipped: dict[int, domain.SkipReason]
) -> list[tuple[int, ActiveRun]]:
    """The active runs of the selection's partitions that would run, by launch position."""
    found = []
    for key, run in active.items():
        position = position_of(plan.resolved, plan.new.order, plan.space, key)
        if position is not None and position not in skipped:
            found.append((position, run))
    return sorted(found, key=lambda pair: pair[0])


@dataclass(frozen=True, slots=True)
class Launched:
    """The backfill of a launch; ``created`` is False when its idempotency key found it."""

    record: BackfillRecord
    created: bool


async def create_backfill(
    backend: Backend, new: NewBackfill, *, audit: AuditOf | None = None
) -> Launched | LaunchProblem:
    """Insert a backfill, once per idempotency key, even under concurrent requests.

    With ``audit``, its entry is appended in the same transaction as the backfill (both
    commit or neither). A key already used by the same request returns that backfill (and
    writes no audit entry); by another request, an ``IDEMPOTENCY_KEY_REUSED`` problem.
    """
    launch = Launch(new, backend.clock(), audit)
    for _ in range(LAUNCH_ATTEMPTS):
        try:
            outcome = await backend.database.transact_batched(write_launches, launch)
        except IdempotencyConflict:
            continue  # another request inserted this key first: the next attempt finds it
        if isinstance(outcome, BackfillRecord):
            return Launched(outcome, created=True)
        async with backend.database.read() as session:
            existing = await BackfillRepository(session).get(outcome.backfill_id)
        if existing is not None:
            return _same_request(existing, new)
    raise RuntimeError("could not insert or find the backfill of an idempotency key")


def _same_request(existing: BackfillRecord, new: NewBackfill) -> Launched | LaunchProblem:
    if existing.request_fingerprint == new.request_fingerprint:
        return Launched(existing, created=False)
    return problem(
        ProblemCode.IDEMPOTENCY_KEY_REUSED,
        f"the idempotency key was used for another request (backfill {backfill_id(existing.id)})",
        "idempotency_key",
    )


__all__ = [
    "Launched",
    "create_backfill",
    "preview_launch",
    "validate_launch",
]
