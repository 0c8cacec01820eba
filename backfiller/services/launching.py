"""Launching a backfill: validate a request, preview it, create it. The one launch path.

``launchBackfill``, ``previewBackfill``, ``retryBackfill``, REST (which runs those mutations)
and trigger evaluations (from the API or the daemon) all come here, so a request is validated
the same way whoever sends it, and exactly once. Everything is private: the request, the
problems (``ProblemCode``, with field paths named after :class:`LaunchRequest`'s fields) and
the preview. The resolvers translate the public input in and the results out.
"""

from __future__ import annotations

import enum
import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from sqlalchemy import Connection

from backfiller import domain
from backfiller.definitions.assets import AssetDefinition
from backfiller.definitions.jobs import JobDefinition
from backfiller.definitions.partitions import KeySpace
from backfiller.ids import backfill_id
from backfiller.observability import tracing
from backfiller.planning import (
    ResolvedSelection,
    Selection,
    SelectionProblem,
    key_at,
    position_of,
    ranged_run_count,
    request_fingerprint,
    resolve_selection,
)
from backfiller.planning.asset_plan import AssetTarget
from backfiller.services.backend import Backend
from backfiller.services.selections import key_space_of
from backfiller.storage.auth import AuditEntry, add_audit_entries
from backfiller.storage.errors import IdempotencyConflict
from backfiller.storage.execution.waits import ActiveRun, WaitsRepository
from backfiller.storage.notifications import WebhookTarget
from backfiller.storage.records import BackfillRecord
from backfiller.storage.repositories import (
    BackfillRepository,
    IdempotencyHit,
    NewBackfill,
    PartitionStateRepository,
    launch_many,
)

MAX_TITLE = 500
MAX_DESCRIPTION = 10_000
MAX_TAGS = 50
MAX_TAG_KEY = 200
MAX_TAG_VALUE = 1_000
MAX_IDEMPOTENCY_KEY = 200
MAX_CONCURRENT_RUNS = 10_000
MAX_RUN_CONFIG_BYTES = 256 * 1024
MAX_KEY_LENGTH = 200
PREVIEW_LISTED = 20
LAUNCH_ATTEMPTS = 3


class ProblemCode(enum.StrEnum):
    """Why a launch is refused (private; the resolvers map it to the public error codes)."""

    JOB_NOT_FOUND = "job_not_found"
    PARTITION_NOT_FOUND = "partition_not_found"
    INVALID_PARTITION_RANGE = "invalid_partition_range"
    EMPTY_SELECTION = "empty_selection"
    INVALID_RUN_CONFIG = "invalid_run_config"
    INVALID_ARGUMENT = "invalid_argument"
    IDEMPOTENCY_KEY_REUSED = "idempotency_key_reused"
    RANGE_TOO_LARGE = "range_too_large"
    ASSET_NOT_FOUND = "asset_not_found"


# ``planning.SelectionProblem`` names its codes; these are the ones it raises.
_SELECTION_CODES = {
    "PARTITION_NOT_FOUND": ProblemCode.PARTITION_NOT_FOUND,
    "INVALID_PARTITION_RANGE": ProblemCode.INVALID_PARTITION_RANGE,
    "EMPTY_SELECTION": ProblemCode.EMPTY_SELECTION,
    "INVALID_ARGUMENT": ProblemCode.INVALID_ARGUMENT,
}


@dataclass(frozen=True, slots=True)
class LaunchProblem:
    """One reason a launch is refused.

    ``field`` is a path in :class:`LaunchRequest` (``("tags", "0", "key")``,
    ``("run_config", "limit")``), or None when the request as a whole is at fault.
    """

    code: ProblemCode
    message: str
    field: tuple[str, ...] | None


@dataclass(frozen=True, slots=True)
class AssetRequest:
    """An asset target as asked: the named assets, and whether to add what is up or
    downstream of them."""

    names: tuple[str, ...]
    upstream: bool = False
    downstream: bool = False


@dataclass(frozen=True, slots=True)
class LaunchRequest:
    """A backfill to launch, as asked: the private twin of ``LaunchBackfillInput``."""

    job: str | None
    selection: Selection
    reprocess: domain.Reprocess = domain.Reprocess.MISSING
    order: domain.Order = domain.Order.OLDEST_FIRST
    max_concurrent_runs: int | None = None
    run_config: dict[str, Any] | None = None
    tags: tuple[tuple[str, str], ...] = ()
    title: str | None = None
    description: str | None = None
    idempotency_key: str | None = None
    notify: tuple[WebhookTarget, ...] = ()
    assets: AssetRequest | None = None
    """An asset target instead of ``job`` (``backfiller.services.asset_launching``)."""


@dataclass(frozen=True, slots=True)
class AssetLaunch:
    """A validated asset launch's plan: the pinned per-asset partitions, their key spaces,
    each asset's dependency level and the root asset whose partitions were selected."""

    target: AssetTarget
    spaces: dict[str, KeySpace]
    levels: dict[str, int]
    root: AssetDefinition


@dataclass(frozen=True, slots=True)
class LaunchPlan:
    """A validated launch: the job, its key space and the private row to insert.

    For an asset launch, ``job``, ``space`` and ``resolved`` are the root asset's and
    ``assets`` the plan of the whole target.
    """

    job: JobDefinition
    space: KeySpace
    resolved: ResolvedSelection
    new: NewBackfill
    assets: AssetLaunch | None = None


@dataclass(frozen=True, slots=True)
class AssetPreviewLine:
    """What a launch would do to one asset."""

    name: str
    level: int
    total: int
    runs: int
    skipped: int
    ranged_runs: int | None = None
    """For an asset with a backfill policy, the runs that its ``runs`` partitions form."""


@dataclass(frozen=True, slots=True)
class LaunchPreview:
    """What a launch would do: how many runs, and the first partitions run and skipped."""

    job: str
    total: int
    runs: int
    skipped: int
    first_partitions: tuple[str, ...]
    skipped_partitions: tuple[tuple[str, domain.SkipReason], ...] = field(default=())
    assets: tuple[AssetPreviewLine, ...] | None = None
    """Per asset of an asset launch, in dependency order; None for a job."""
    ranged_runs: int | None = None
    """For a job with a backfill policy, the runs that ``runs`` partitions form (for an asset
    backfill with such an asset, the runs of every asset); else None."""
    waiting: int = 0
    """Of ``runs``: partitions another backfill is running now (their slots would wait)."""
    waiting_partitions: tuple[tuple[str, ActiveRun], ...] = ()
    """The first of them in launch order, with the run each would wait for."""


def _problem(code: ProblemCode, message: str, *path: str) -> LaunchProblem:
    return LaunchProblem(code, message, path or None)


def _text_problems(value: str, limit: int, *path: str) -> list[LaunchProblem]:
    if len(value) > limit:
        return [
            _problem(ProblemCode.INVALID_ARGUMENT, f"must be at most {limit} characters", *path)
        ]
    if "\x00" in value:
        return [_problem(ProblemCode.INVALID_ARGUMENT, "must not contain NUL characters", *path)]
    return []


def _tag_problems(tags: Sequence[tuple[str, str]]) -> list[LaunchProblem]:
    problems: list[LaunchProblem] = []
    if len(tags) > MAX_TAGS:
        problems.append(_problem(ProblemCode.INVALID_ARGUMENT, f"at most {MAX_TAGS} tags", "tags"))
    seen: set[str] = set()
    for i, (key, value) in enumerate(tags):
        where = ("tags", str(i))
        if not key.strip():
            problems.append(
                _problem(ProblemCode.INVALID_ARGUMENT, "tag key must not be blank", *where, "key")
            )
        problems += _text_problems(key, MAX_TAG_KEY, *where, "key")
        problems += _text_problems(value, MAX_TAG_VALUE, *where, "value")
        if key in seen:
            problems.append(
                _problem(ProblemCode.INVALID_ARGUMENT, f"tag {key!r} is given twice", *where, "key")
            )
        seen.add(key)
    return problems


def _malformed_key(key: str) -> bool:
    return len(key) > MAX_KEY_LENGTH or "\x00" in key


def _selection_problems(selection: Selection) -> list[LaunchProblem]:
    malformed = "not a well-formed partition key"
    if selection.keys is not None:
        for i, key in enumerate(selection.keys):
            if _malformed_key(key):
                code = ProblemCode.INVALID_PARTITION_RANGE
                return [_problem(code, malformed, "partitions", "keys", str(i))]
    problems: list[LaunchProblem] = []
    if selection.kind is domain.SelectionKind.RANGE:
        for name, bound in (("start", selection.range_start), ("end", selection.range_end)):
            if bound is not None and _malformed_key(bound):
                code = ProblemCode.INVALID_PARTITION_RANGE
                problems.append(_problem(code, malformed, "partitions", "range", name))
    return problems


def scalar_problems(request: LaunchRequest) -> list[LaunchProblem]:
    """The checks that need neither the job nor the database (pure)."""
    problems: list[LaunchProblem] = []
    if request.title is not None:
        problems += _text_problems(request.title, MAX_TITLE, "title")
    if request.description is not None:
        problems += _text_problems(request.description, MAX_DESCRIPTION, "description")
    if request.idempotency_key is not None:
        key = request.idempotency_key
        if not key.strip():
            problems.append(
                _problem(ProblemCode.INVALID_ARGUMENT, "must not be blank", "idempotency_key")
            )
        problems += _text_problems(key, MAX_IDEMPOTENCY_KEY, "idempotency_key")
    mcr = request.max_concurrent_runs
    if mcr is not None and not 1 <= mcr <= MAX_CONCURRENT_RUNS:
        message = f"must be between 1 and {MAX_CONCURRENT_RUNS}"
        problems.append(_problem(ProblemCode.INVALID_ARGUMENT, message, "max_concurrent_runs"))
    problems += _tag_problems(request.tags)
    problems += _selection_problems(request.selection)
    if request.run_config is not None:
        try:
            size = len(json.dumps(request.run_config))
        except (TypeError, ValueError):
            size = MAX_RUN_CONFIG_BYTES + 1
        if size > MAX_RUN_CONFIG_BYTES:
            message = f"must be at most {MAX_RUN_CONFIG_BYTES} bytes as JSON"
            problems.append(_problem(ProblemCode.INVALID_RUN_CONFIG, message, "run_config"))
    return problems


def fingerprint_of(request: LaunchRequest, job: str) -> str:
    """What makes two launches "the same request" for an idempotency key.

    Its shape is stored (``backfills.request_fingerprint``): changing it would make a retried
    request with an old key look different.
    """
    selection = request.selection
    normalized: dict[str, Any] = {
        "job": job,
        "selection": [
            selection.kind.value,
            selection.range_start,
            selection.range_end,
            list(selection.keys) if selection.keys is not None else None,
        ],
        "reprocess": request.reprocess.value,
        "order": request.order.value,
        "max_concurrent_runs": request.max_concurrent_runs,
        "run_config": request.run_config,
        "tags": [list(t) for t in request.tags],
        "title": request.title,
        "description": request.description,
    }
    if request.assets is not None:  # absent for a job: its fingerprints stay the same
        chosen = request.assets
        normalized["assets"] = [list(chosen.names), chosen.upstream, chosen.downstream]
    if request.notify:  # absent otherwise: fingerprints of earlier launches stay the same
        normalized["notify"] = [[w.url, list(w.events), w.format] for w in request.notify]
    return request_fingerprint(normalized)


async def validate_launch(
    backend: Backend,
    request: LaunchRequest,
    *,
    creator: str | None,
    parent_id: int | None = None,
) -> LaunchPlan | list[LaunchProblem]:
    """Check ``request`` against the definitions and the database; plan its insert."""
    if request.assets is not None:
        from backfiller.services.asset_launching import validate_asset_launch

        return await validate_asset_launch(backend, request, creator=creator, parent_id=parent_id)
    problems = scalar_problems(request)
    job = backend.definitions.get_job(request.job) if request.job else None
    if job is None:
        message = f"no job named {request.job!r}" if request.job else "a target job is required"
        return [_problem(ProblemCode.JOB_NOT_FOUND, message, "job"), *problems]
    if not problems:
        config = request.run_config if request.run_config is not None else {}
        for path, message in job.config.errors(config):
            problems.append(_problem(ProblemCode.INVALID_RUN_CONFIG, message, "run_config", *path))
    if problems:
        return problems
    space = await key_space_of(job.partitions, backend.clock(), backend.database)
    try:
        resolved = resolve_selection(request.selection, job.partitions, space)
    except SelectionProblem as problem:
        return [
            LaunchProblem(_SELECTION_CODES[problem.code], problem.message, tuple(problem.field))
        ]
    cap = backend.settings.max_partitions_per_backfill
    if resolved.total > cap:
        message = (
            f"the selection has {resolved.total} partitions; this server allows "
            f"at most {cap} per backfill"
        )
        return [_problem(ProblemCode.RANGE_TOO_LARGE, message, "partitions")]
    return LaunchPlan(
        job, space, resolved, _new_backfill(request, job, resolved, creator, parent_id)
    )


def _new_backfill(
    request: LaunchRequest,
    job: JobDefinition,
    resolved: ResolvedSelection,
    creator: str | None,
    parent_id: int | None,
) -> NewBackfill:
    selection = request.selection
    return NewBackfill(
        job_name=job.name,
        selection_kind=selection.kind,
        range_start=selection.range_start,
        range_end=selection.range_end,
        keys=list(selection.keys) if selection.keys is not None else None,
        partitions_fingerprint=job.partitions.fingerprint(),
        first_index=resolved.first_index,
        total=resolved.total,
        reprocess=request.reprocess,
        order=request.order,
        max_concurrent_runs=request.max_concurrent_runs,
        run_config=request.run_config,
        tags=list(request.tags),
        title=request.title,
        description=request.description,
        idempotency_key=request.idempotency_key,
        request_fingerprint=fingerprint_of(request, job.name),
        creator=creator,
        parent_id=parent_id,
        notify=request.notify,
        trace_parent=tracing.current_trace_parent(),
    )


async def preview_launch(backend: Backend, plan: LaunchPlan) -> LaunchPreview:
    """What launching ``plan`` would run and skip, reading the partitions' history."""
    if plan.assets is not None:
        from backfiller.services.asset_launching import preview_asset_launch

        return await preview_asset_launch(backend, plan)
    resolved, space, new = plan.resolved, plan.space, plan.new
    skipped: dict[int, domain.SkipReason] = {}
    async with backend.database.read() as session:
        history: dict[str, domain.RunState] = {}
        if new.reprocess is not domain.Reprocess.ALL:
            history = await PartitionStateRepository(session).all_of_job(
                new.job_name, [domain.RunState.SUCCESS, domain.RunState.FAILED]
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


AuditOf = Callable[[int], AuditEntry]
"""The audit entry of a successful launch, given the new backfill's primary key."""


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
    launch = _Launch(new, backend.clock(), audit)
    for _ in range(LAUNCH_ATTEMPTS):
        try:
            outcome = await backend.database.transact_batched(_write_launches, launch)
        except IdempotencyConflict:
            continue  # another request inserted this key first: the next attempt finds it
        if isinstance(outcome, BackfillRecord):
            return Launched(outcome, created=True)
        async with backend.database.read() as session:
            existing = await BackfillRepository(session).get(outcome.backfill_id)
        if existing is not None:
            return _same_request(existing, new)
    raise RuntimeError("could not insert or find the backfill of an idempotency key")


@dataclass(frozen=True, slots=True)
class _Launch:
    """One launch's write, as queued for its group's transaction."""

    new: NewBackfill
    now: datetime
    audit: AuditOf | None


def _write_launches(
    conn: Connection, launches: Sequence[_Launch]
) -> list[BackfillRecord | IdempotencyHit]:
    """The writes of launches that commit together: each backfill once per idempotency key,
    then the audit entry of each one created (the batch of ``Database.transact_batched``)."""
    outcomes = launch_many(conn, [(launch.new, launch.now) for launch in launches])
    audits = [
        launch.audit(outcome.id)
        for launch, outcome in zip(launches, outcomes, strict=True)
        if launch.audit is not None and isinstance(outcome, BackfillRecord)
    ]
    add_audit_entries(conn, audits)
    return outcomes


def _same_request(existing: BackfillRecord, new: NewBackfill) -> Launched | LaunchProblem:
    if existing.request_fingerprint == new.request_fingerprint:
        return Launched(existing, created=False)
    return _problem(
        ProblemCode.IDEMPOTENCY_KEY_REUSED,
        f"the idempotency key was used for another request (backfill {backfill_id(existing.id)})",
        "idempotency_key",
    )


__all__ = [
    "AssetLaunch",
    "AssetPreviewLine",
    "AssetRequest",
    "LaunchPlan",
    "LaunchPreview",
    "LaunchProblem",
    "LaunchRequest",
    "Launched",
    "ProblemCode",
    "create_backfill",
    "preview_launch",
    "scalar_problems",
    "validate_launch",
]
