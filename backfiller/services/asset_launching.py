"""Launching an asset backfill: validate, preview and retry, behind the one launch path.

:func:`backfiller.services.launching.validate_launch` and ``preview_launch`` come here when a
:class:`LaunchRequest` targets assets. The partitions select the root assets' partitions (the
selected assets none of whose upstream assets is selected); each other asset covers the image
of its upstream assets' partitions through the graph's mappings
(``backfiller.planning.asset_plan``).
What is stored is the selection as asked plus each asset's pinned range or keys: one insert,
whatever the number of partitions, through ``create_backfill`` like a job's.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Collection, Sequence

from backfiller import domain
from backfiller.definitions.assets import AssetDefinition
from backfiller.definitions.partitions import KeySpace
from backfiller.planning import (
    ResolvedSelection,
    SelectionProblem,
    ranged_run_count,
    resolve_selection,
)
from backfiller.planning.asset_plan import (
    AssetPart,
    AssetPlanProblem,
    AssetTarget,
    map_parts,
    slot_key,
    split_slot_key,
)
from backfiller.services.backend import Backend
from backfiller.services.launch_checks import scalar_problems
from backfiller.services.launch_types import (
    ASSETS_JOB,
    PREVIEW_LISTED,
    AssetLaunch,
    AssetPreviewLine,
    AssetRequest,
    LaunchPlan,
    LaunchPreview,
    LaunchProblem,
    LaunchRequest,
    ProblemCode,
    new_backfill,
    problem,
    retry_request,
    selection_problem,
)
from backfiller.services.selections import key_space_of
from backfiller.storage.asset_reads import AssetReads
from backfiller.storage.execution.waits import ActiveRun, WaitsRepository
from backfiller.storage.launches import NewBackfill
from backfiller.storage.records import BackfillRecord
from backfiller.storage.repositories import PartitionStateRepository

MAX_ASSET_NAMES = 1_000


def _selected(backend: Backend, chosen: AssetRequest) -> list[str] | LaunchProblem:
    graph = backend.definitions.asset_graph
    names = list(chosen.names)
    if not names or len(names) > MAX_ASSET_NAMES:
        message = f"name between 1 and {MAX_ASSET_NAMES} assets"
        return problem(ProblemCode.INVALID_ARGUMENT, message, "assets", "names")
    for i, name in enumerate(names):
        if name not in graph:
            message = f"no asset named {name[:200]!r}"
            return problem(ProblemCode.ASSET_NOT_FOUND, message, "assets", "names", str(i))
    return graph.select(names, upstream=chosen.upstream, downstream=chosen.downstream)


def _root_of(assets: list[AssetDefinition], selected: list[str]) -> AssetDefinition | LaunchProblem:
    """The root assets' partitions definition: the one the selection is about."""
    inside = set(selected)
    roots = [a for a in assets if not any(d.asset in inside for d in a.deps)]
    partitioned = [a for a in roots if a.partitions is not None] or roots
    if len({a.key_partitions.fingerprint() for a in partitioned}) > 1:
        message = (
            "the root assets ("
            + ", ".join(repr(a.name) for a in partitioned)
            + ") have different partitions; select roots of one partitions definition"
        )
        return problem(ProblemCode.INVALID_ARGUMENT, message, "assets", "names")
    return partitioned[0]


def _config_problems(request: LaunchRequest, assets: list[AssetDefinition]) -> list[LaunchProblem]:
    """Each asset's first run-config problem, named after the asset."""
    config = request.run_config if request.run_config is not None else {}
    problems: list[LaunchProblem] = []
    for a in assets:
        for path, message in a.job.config.errors(config):
            problems.append(
                problem(ProblemCode.INVALID_RUN_CONFIG, f"{a.name}: {message}", "run_config", *path)
            )
            break
    return problems


async def validate_asset_launch(
    backend: Backend,
    request: LaunchRequest,
    *,
    creator: str | None,
    team: str | None = None,
    parent_id: int | None = None,
) -> LaunchPlan | list[LaunchProblem]:
    """Check an asset ``request`` against the graph and the database; plan its one insert."""
    assert request.assets is not None
    problems = scalar_problems(request)
    selected = _selected(backend, request.assets)
    if isinstance(selected, LaunchProblem):
        return [selected, *problems]
    assets = [a for n in selected if (a := backend.definitions.get_asset(n)) is not None]
    if not problems:
        problems = _config_problems(request, assets)
    if problems:
        return problems
    root = _root_of(assets, selected)
    if isinstance(root, LaunchProblem):
        return [root]
    now = backend.clock()
    spaces = {a.name: await key_space_of(a.key_partitions, now, backend.database) for a in assets}
    try:
        resolved = resolve_selection(request.selection, root.key_partitions, spaces[root.name])
    except SelectionProblem as found:
        return [selection_problem(found)]
    try:
        parts = map_parts(
            backend.definitions.asset_graph, selected, _root_part(root, resolved), spaces
        )
    except AssetPlanProblem as found:
        return [problem(ProblemCode.INVALID_ARGUMENT, str(found), "partitions")]
    chosen = request.assets
    target = AssetTarget(chosen.names, chosen.upstream, chosen.downstream, tuple(parts))
    cap = backend.settings.max_partitions_per_backfill
    if target.total > cap:
        message = (
            f"the selection has {target.total} asset partitions; this server allows "
            f"at most {cap} per backfill"
        )
        return [problem(ProblemCode.RANGE_TOO_LARGE, message, "partitions")]
    launch = AssetLaunch(target, spaces, backend.definitions.asset_graph.levels(selected), root)
    new = new_backfill(
        request,
        job=None,
        assets=target,
        partitions_fingerprint=target.parts[0].fingerprint,
        first_index=resolved.first_index,
        total=target.total,
        creator=creator,
        team=team,
        parent_id=parent_id,
    )
    return LaunchPlan(root.job, spaces[root.name], resolved, new, assets=launch)


def _root_part(root: AssetDefinition, resolved: ResolvedSelection) -> AssetPart:
    fingerprint = root.key_partitions.fingerprint()
    if resolved.keys is not None:
        return AssetPart(root.name, fingerprint, 0, resolved.total, resolved.keys)
    return AssetPart(root.name, fingerprint, resolved.first_index, resolved.total)


async def preview_asset_launch(backend: Backend, plan: LaunchPlan) -> LaunchPreview:
    """Per asset: its level and how many partitions would run or be skipped; the first
    partitions that would run and the first skipped, in launch (claim position) order.

    Reads each asset's partition history once; lists partitions only up to the preview's
    lists (a mostly skipped selection walks its slots in order until the lists are full).
    """
    launch = plan.assets
    assert launch is not None
    target, reprocess, order = launch.target, plan.new.reprocess, plan.new.order
    skips: list[dict[int, domain.SkipReason]] = []
    lines: list[AssetPreviewLine] = []
    waiting: list[ActiveRun] = []
    for part in target.parts:
        found: dict[int, domain.SkipReason] = {}
        if reprocess is not domain.Reprocess.ALL:
            found = await _skipped_within(backend, part, launch.spaces[part.name], reprocess)
        skips.append(found)
        waiting += await _waits_within(backend, part, launch.spaces[part.name])
        level = launch.levels.get(part.name, 0)
        lines.append(_preview_line(backend, part, level, launch.spaces[part.name], found))
    ranged = any(line.ranged_runs is not None for line in lines)
    skipped_total = sum(line.skipped for line in lines)
    return LaunchPreview(
        job=ASSETS_JOB,
        total=target.total,
        runs=target.total - skipped_total,
        skipped=skipped_total,
        first_partitions=_first_to_run(launch, skips, order),
        skipped_partitions=_first_skipped(launch, skips, order),
        assets=tuple(lines),
        ranged_runs=(
            sum(line.runs if line.ranged_runs is None else line.ranged_runs for line in lines)
            if ranged
            else None
        ),
        waiting=len(waiting),
        waiting_partitions=tuple(
            (slot_key(run.job_name, run.partition_key), run) for run in waiting[:PREVIEW_LISTED]
        ),
    )


def _preview_line(
    backend: Backend,
    part: AssetPart,
    level: int,
    space: KeySpace,
    skipped: dict[int, domain.SkipReason],
) -> AssetPreviewLine:
    """One asset's preview: partitions that would run or be skipped, and for an asset with a
    backfill policy the runs they form."""
    asset = backend.definitions.get_asset(part.name)
    ranged: int | None = None
    if asset is not None and (policy := asset.job.backfill_policy) is not None:
        kind = domain.SelectionKind.RANGE if part.keys is None else domain.SelectionKind.KEYS
        resolved = ResolvedSelection(kind, part.start, part.count, part.keys)
        oldest = domain.Order.OLDEST_FIRST  # offsets count from the oldest partition
        ranged = ranged_run_count(resolved, oldest, space, set(skipped), policy.partitions_per_run)
    runs = part.count - len(skipped)
    return AssetPreviewLine(part.name, level, part.count, runs, len(skipped), ranged)


def _slot_at(launch: AssetLaunch, i: int, k: int) -> str:
    part = launch.target.parts[i]
    return slot_key(part.name, part.key_at(k, launch.spaces[part.name]))


def _first_to_run(
    launch: AssetLaunch, skips: list[dict[int, domain.SkipReason]], order: domain.Order
) -> tuple[str, ...]:
    first: list[str] = []
    for i, k in launch.target.in_launch_order(order):
        if len(first) >= PREVIEW_LISTED:
            break
        if k not in skips[i]:
            first.append(_slot_at(launch, i, k))
    return tuple(first)


def _first_skipped(
    launch: AssetLaunch, skips: list[dict[int, domain.SkipReason]], order: domain.Order
) -> tuple[tuple[str, domain.SkipReason], ...]:
    target = launch.target
    by_position = sorted(
        (target.position_of(i, k, order), i, k, reason)
        for i, found in enumerate(skips)
        for k, reason in found.items()
    )
    return tuple(
        (_slot_at(launch, i, k), reason) for _, i, k, reason in by_position[:PREVIEW_LISTED]
    )


async def _skipped_within(
    backend: Backend, part: AssetPart, space: KeySpace, reprocess: domain.Reprocess
) -> dict[int, domain.SkipReason]:
    """The partitions of ``part`` (by their number ``k`` in it) that would be skipped."""
    async with backend.database.read() as session:
        history = await PartitionStateRepository(session).all_of_job(
            part.name, [domain.RunState.SUCCESS, domain.RunState.FAILED, domain.RunState.SKIPPED]
        )
    numbers = {key: k for k, key in enumerate(part.keys)} if part.keys is not None else None
    found: dict[int, domain.SkipReason] = {}
    for key, state in history.items():
        reason = domain.skip_reason_for(reprocess, state)
        if reason is None:
            continue
        if numbers is not None:
            k = numbers.get(key)
        else:
            index = space.index_of(key)
            k = index - part.start if index is not None else None
        if k is not None and 0 <= k < part.count:
            found[k] = reason
    return found


async def _waits_within(backend: Backend, part: AssetPart, space: KeySpace) -> list[ActiveRun]:
    """The active runs (of other backfills) that partitions of ``part`` would wait for, by key."""
    async with backend.database.read() as session:
        active = await WaitsRepository(session).active_runs(part.name)
    keys = set(part.keys) if part.keys is not None else None

    def within(key: str) -> bool:
        if keys is not None:
            return key in keys
        index = space.index_of(key)
        return index is not None and part.start <= index < part.start + part.count

    return sorted((r for k, r in active.items() if within(k)), key=lambda r: r.partition_key)


async def asset_retry_of(
    backend: Backend,
    parent: BackfillRecord,
    wanted: Collection[domain.SlotState],
    fingerprint: str,
    *,
    idempotency_key: str | None,
    creator: str | None,
    team: str | None = None,
) -> NewBackfill | str:
    """The child of an asset backfill, or why there is nothing to retry.

    Per asset, the keys of the parent's slots in the ``wanted`` statuses plus the slots
    skipped because an upstream failed (``UPSTREAM_FAILED``): nothing healthy runs again.
    """
    assert parent.asset_target is not None
    target = AssetTarget.from_json(parent.asset_target)
    chosen = await _retried_keys(backend, parent.id, wanted)
    parts: list[AssetPart] = []
    for part in target.parts:
        keys = chosen.get(part.name)
        asset = backend.definitions.get_asset(part.name)
        if not keys or asset is None:
            continue
        space = await key_space_of(asset.key_partitions, parent.created_at, backend.database)
        ordered = sorted(keys, key=lambda k: space.index_of(k) or 0)
        parts.append(AssetPart(part.name, part.fingerprint, 0, len(ordered), tuple(ordered)))
    if not parts:
        return "the backfill has no partition in the statuses to retry"
    child = AssetTarget(target.names, target.upstream, target.downstream, tuple(parts))
    return new_backfill(
        retry_request(
            parent, [slot_key(p.name, k) for p in parts for k in p.keys or ()], idempotency_key
        ),
        job=None,
        assets=child,
        partitions_fingerprint=parts[0].fingerprint,
        first_index=0,
        total=child.total,
        creator=creator,
        team=team,
        parent_id=parent.id,
        fingerprint=fingerprint,
    )


async def _retried_keys(
    backend: Backend, pk: int, wanted: Collection[domain.SlotState]
) -> dict[str, set[str]]:
    async with backend.database.read() as session:
        keys = await AssetReads(session).keys_to_retry(pk, wanted)
    chosen: dict[str, set[str]] = defaultdict(set)
    for value in keys:
        name, key = split_slot_key(value)
        chosen[name].add(key)
    return chosen


def asset_names_of(plan: LaunchPlan) -> Sequence[str]:
    """Every asset a plan runs (for job-scoped tokens: each is a job of its own)."""
    return plan.assets.target.assets if plan.assets is not None else [plan.job.name]


__all__ = [
    "asset_names_of",
    "asset_retry_of",
    "preview_asset_launch",
    "validate_asset_launch",
]
