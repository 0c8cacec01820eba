"""Public launch input with an asset target -> private command, every failure a `UserError`.

The partitions select the root assets' partitions (the selected assets none of whose upstream
assets is selected); each other asset covers the image of its upstream assets' partitions
through the graph's mappings (``backfiller.asset_plan``). What is stored is the selection as
asked plus each asset's pinned range or keys: one insert, whatever the number of partitions.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, cast

from backfiller.asset_plan import AssetPart, AssetPlanProblem, AssetTarget, map_parts
from backfiller.definitions.assets import AssetDefinition
from backfiller.definitions.partitions import KeySpace
from backfiller.definitions.requests import BackfillRequest
from backfiller.planning import (
    ResolvedSelection,
    SelectionProblem,
    request_fingerprint,
    resolve_selection,
)
from backfiller.resolvers.context import Context
from backfiller.resolvers.translate import order_of, reprocess_of
from backfiller.schema.assets import AssetSelectionInput
from backfiller.schema.common import UserError, UserErrorCode
from backfiller.schema.inputs import BackfillTargetInput, LaunchBackfillInput
from backfiller.storage.repositories import NewBackfill
from backfiller.storage.selections import key_space_of

ASSETS_JOB_NAME = "@assets"
"""The ``job_name`` stored for asset backfills (no job can be named so)."""

MAX_ASSET_NAMES = 1_000


@dataclass(frozen=True)
class AssetLaunch:
    """A validated asset launch: the plan and the private record to insert."""

    target: AssetTarget
    spaces: dict[str, KeySpace]
    levels: dict[str, int]
    root: AssetDefinition
    resolved: ResolvedSelection
    new: NewBackfill


def _error(code: UserErrorCode, message: str, field: list[str]) -> UserError:
    return UserError(field=field, message=message, code=code)


def _selected(ctx: Context, chosen: AssetSelectionInput) -> list[str] | UserError:
    graph = ctx.definitions.asset_graph
    names = list(chosen.names or [])
    if not names or len(names) > MAX_ASSET_NAMES:
        return _error(
            UserErrorCode.INVALID_ARGUMENT,
            f"name between 1 and {MAX_ASSET_NAMES} assets",
            ["target", "assets", "names"],
        )
    for i, name in enumerate(names):
        if name not in graph:
            return _error(
                UserErrorCode.ASSET_NOT_FOUND,
                f"no asset named {name[:200]!r}",
                ["target", "assets", "names", str(i)],
            )
    return graph.select(names, upstream=bool(chosen.upstream), downstream=bool(chosen.downstream))


def _root_of(assets: list[AssetDefinition], selected: list[str]) -> AssetDefinition | UserError:
    """The root assets' partitions definition: the one the selection is about."""
    inside = set(selected)
    roots = [a for a in assets if not any(d.asset in inside for d in a.deps)]
    partitioned = [a for a in roots if a.partitions is not None] or roots
    fingerprints = {a.key_partitions.fingerprint() for a in partitioned}
    if len(fingerprints) > 1:
        return _error(
            UserErrorCode.INVALID_ARGUMENT,
            "the root assets ("
            + ", ".join(repr(a.name) for a in partitioned)
            + ") have different partitions; select roots of one partitions definition",
            ["target", "assets", "names"],
        )
    return partitioned[0]


async def asset_launch_from_input(
    ctx: Context,
    input: LaunchBackfillInput,
    errors: list[UserError],
    *,
    creator: str | None,
    parent_id: int | None,
) -> AssetLaunch | list[UserError]:
    """Validate an asset launch (``errors``: the scalar checks already made); translate it."""
    from backfiller.resolvers.commands import selection_of

    chosen = cast(AssetSelectionInput, input.target.assets)
    selected = _selected(ctx, chosen)
    if isinstance(selected, UserError):
        return [selected, *errors]
    run_config = cast(dict[str, Any] | None, input.run_config or None)
    assets = [a for n in selected if (a := ctx.definitions.get_asset(n)) is not None]
    if not errors:
        for a in assets:
            for path, message in a.job.config.errors(run_config if run_config is not None else {}):
                errors.append(
                    _error(
                        UserErrorCode.INVALID_RUN_CONFIG,
                        f"{a.name}: {message}",
                        ["runConfig", *path],
                    )
                )
                break
    if errors:
        return errors
    root = _root_of(assets, selected)
    if isinstance(root, UserError):
        return [root]
    now = ctx.now()
    spaces = {a.name: await key_space_of(a.key_partitions, now, ctx.database) for a in assets}
    selection = selection_of(input)
    try:
        resolved = resolve_selection(selection, root.key_partitions, spaces[root.name])
    except SelectionProblem as problem:
        return [_error(UserErrorCode[problem.code], problem.message, problem.field)]
    fingerprint = root.key_partitions.fingerprint()
    if resolved.keys is not None:
        root_part = AssetPart(root.name, fingerprint, 0, resolved.total, resolved.keys)
    else:
        root_part = AssetPart(root.name, fingerprint, resolved.first_index, resolved.total)
    try:
        parts = map_parts(ctx.definitions.asset_graph, selected, root_part, spaces)
    except AssetPlanProblem as problem:
        return [_error(UserErrorCode.INVALID_ARGUMENT, str(problem), ["partitions"])]
    target = AssetTarget(
        tuple(chosen.names), bool(chosen.upstream), bool(chosen.downstream), tuple(parts)
    )
    cap = ctx.services.settings.max_partitions_per_backfill
    if target.total > cap:
        return [
            _error(
                UserErrorCode.RANGE_TOO_LARGE,
                f"the selection has {target.total} asset partitions; this server allows "
                f"at most {cap} per backfill",
                ["partitions"],
            )
        ]
    return AssetLaunch(
        target=target,
        spaces=spaces,
        levels=ctx.definitions.asset_graph.levels(selected),
        root=root,
        resolved=resolved,
        new=_new_backfill(ctx, input, target, resolved.first_index, run_config, creator, parent_id),
    )


def _new_backfill(
    ctx: Context,
    input: LaunchBackfillInput,
    target: AssetTarget,
    first_index: int,
    run_config: dict[str, Any] | None,
    creator: str | None,
    parent_id: int | None,
) -> NewBackfill:
    from backfiller.resolvers.commands import selection_of

    selection = selection_of(input)
    reprocess = reprocess_of(input.reprocess)
    order = order_of(input.order)
    tags = [(t.key, t.value) for t in (input.tags or [])]
    normalized = {
        "assets": target.to_json(),
        "selection": [
            selection.kind.value,
            selection.range_start,
            selection.range_end,
            list(selection.keys) if selection.keys is not None else None,
        ],
        "reprocess": reprocess.value,
        "order": order.value,
        "max_concurrent_runs": input.max_concurrent_runs,
        "run_config": run_config,
        "tags": tags,
        "title": input.title or None,
        "description": input.description or None,
    }
    return NewBackfill(
        job_name=ASSETS_JOB_NAME,
        selection_kind=selection.kind,
        range_start=selection.range_start,
        range_end=selection.range_end,
        keys=list(selection.keys) if selection.keys is not None else None,
        partitions_fingerprint=target.parts[0].fingerprint,
        first_index=first_index,
        total=target.total,
        reprocess=reprocess,
        order=order,
        max_concurrent_runs=input.max_concurrent_runs or None,
        run_config=run_config,
        tags=tags,
        title=input.title or None,
        description=input.description or None,
        idempotency_key=input.idempotency_key or None,
        request_fingerprint=request_fingerprint(normalized),
        creator=creator if creator is not None else ctx.actor,
        parent_id=parent_id,
        asset_target=target.to_json(),
    )


def target_input_of(request: BackfillRequest) -> BackfillTargetInput:
    """The target of a Python ``BackfillRequest`` (a trigger's), as the public input."""
    if request.assets is None:
        return BackfillTargetInput(job=request.job)
    chosen = request.assets
    return BackfillTargetInput(
        assets=AssetSelectionInput(
            names=list(chosen.names), upstream=chosen.upstream, downstream=chosen.downstream
        )
    )
