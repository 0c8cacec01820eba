"""The launch's private vocabulary: the request, its problems, its plan and its preview, and
the one builder of the row a launch (or a retry) inserts.

Shared by the job launch (``launching``), the asset launch (``asset_launching``), the trigger
evaluations and the resolvers, so that none of them imports another for its types.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import Any

from backfiller import domain
from backfiller.definitions.assets import AssetDefinition
from backfiller.definitions.jobs import JobDefinition
from backfiller.definitions.partitions import KeySpace
from backfiller.ids import backfill_id
from backfiller.observability import tracing
from backfiller.planning import ResolvedSelection, Selection, SelectionProblem, request_fingerprint
from backfiller.planning.asset_plan import AssetTarget
from backfiller.storage.execution.waits import ActiveRun
from backfiller.storage.launches import NewBackfill
from backfiller.storage.notifications import WebhookTarget
from backfiller.storage.records import BackfillRecord

PREVIEW_LISTED = 20
"""A preview lists at most this many partitions to run, to skip and waiting."""

ASSETS_JOB = "@assets"
"""What names the job of an asset launch, which has none: its preview's ``job`` (public:
``BackfillPreview.job`` says so) and the job in its request fingerprint (stored:
``backfills.request_fingerprint``, so a request retried with an earlier key looks the same).
Asset backfills were stored under this job name before ``backfills.kind``."""


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
    priority: int | None = None
    """Higher is claimed first (``backfiller.domain.fair_share``); None: the job's default."""


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


def problem(code: ProblemCode, message: str, *path: str) -> LaunchProblem:
    """A problem with the field at ``path`` in :class:`LaunchRequest` (none: the request)."""
    return LaunchProblem(code, message, path or None)


# ``planning.SelectionProblem`` names its codes; these are the ones it raises.
_SELECTION_CODES = {
    "PARTITION_NOT_FOUND": ProblemCode.PARTITION_NOT_FOUND,
    "INVALID_PARTITION_RANGE": ProblemCode.INVALID_PARTITION_RANGE,
    "EMPTY_SELECTION": ProblemCode.EMPTY_SELECTION,
    "INVALID_ARGUMENT": ProblemCode.INVALID_ARGUMENT,
}


def selection_problem(found: SelectionProblem) -> LaunchProblem:
    """A selection that does not resolve, as a launch problem."""
    return LaunchProblem(_SELECTION_CODES[found.code], found.message, tuple(found.field))


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
    if request.priority is not None:  # absent otherwise, as ``notify``
        normalized["priority"] = request.priority
    if request.notify:  # absent otherwise: fingerprints of earlier launches stay the same
        normalized["notify"] = [[w.url, list(w.events), w.format] for w in request.notify]
    return request_fingerprint(normalized)


def new_backfill(
    request: LaunchRequest,
    *,
    job: JobDefinition | None,
    assets: AssetTarget | None = None,
    partitions_fingerprint: str,
    first_index: int,
    total: int,
    creator: str | None,
    team: str | None = None,
    parent_id: int | None = None,
    fingerprint: str | None = None,
) -> NewBackfill:
    """The row a launch inserts: of ``job``'s partitions, or (``job`` None) of the ``assets``.

    ``fingerprint`` is the request's for its idempotency key (default: :func:`fingerprint_of`
    the request when it has a key, else none, ``""``: it is compared only when a key is used
    again; a retry passes its own). ``team``: the launcher's, which the backfill acts
    for; its priority is the request's, else the job's default.
    """
    assert (job is None) != (assets is None), "a backfill runs a job or assets"
    selection = request.selection
    return NewBackfill(
        job_name=job.name if job is not None else "",
        selection_kind=selection.kind,
        range_start=selection.range_start,
        range_end=selection.range_end,
        keys=list(selection.keys) if selection.keys is not None else None,
        partitions_fingerprint=partitions_fingerprint,
        first_index=first_index,
        total=total,
        reprocess=request.reprocess,
        order=request.order,
        max_concurrent_runs=request.max_concurrent_runs,
        run_config=request.run_config,
        tags=list(request.tags),
        title=request.title,
        description=request.description,
        idempotency_key=request.idempotency_key,
        request_fingerprint=(
            fingerprint
            if fingerprint is not None
            else fingerprint_of(request, job.name if job is not None else ASSETS_JOB)
            if request.idempotency_key is not None
            else ""  # compared only under an idempotency key (``services.launching``)
        ),
        creator=creator,
        team=team,
        priority=(
            request.priority
            if request.priority is not None
            else (job.priority if job is not None else 0)
        ),
        parent_id=parent_id,
        notify=request.notify,
        trace_parent=tracing.current_trace_parent(),
        asset_target=assets.to_json() if assets is not None else None,
    )


def retry_request(
    parent: BackfillRecord, keys: list[str], idempotency_key: str | None
) -> LaunchRequest:
    """A retry of ``parent``: its ``keys`` again whatever their history, with its settings."""
    title = parent.title or backfill_id(parent.id)
    return LaunchRequest(
        job=parent.job_name or None,
        selection=Selection(domain.SelectionKind.KEYS, keys=tuple(keys)),
        reprocess=domain.Reprocess.ALL,
        order=parent.order,
        max_concurrent_runs=parent.max_concurrent_runs,
        run_config=parent.run_config,
        tags=tuple((str(k), str(v)) for k, v in parent.tags),
        title=f"Retry of {title}",
        description=parent.description,
        idempotency_key=idempotency_key,
        priority=parent.priority,
    )


__all__ = [
    "ASSETS_JOB",
    "PREVIEW_LISTED",
    "AssetLaunch",
    "AssetPreviewLine",
    "AssetRequest",
    "LaunchPlan",
    "LaunchPreview",
    "LaunchProblem",
    "LaunchRequest",
    "ProblemCode",
    "fingerprint_of",
    "new_backfill",
    "problem",
    "retry_request",
    "selection_problem",
]
