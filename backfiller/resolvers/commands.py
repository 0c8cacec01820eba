"""Public launch input -> private command, with every expected failure as a `UserError`."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, cast

import strawberry

from backfiller import domain
from backfiller.definitions.jobs import JobDefinition
from backfiller.definitions.partitions import KeySpace
from backfiller.planning import (
    ResolvedSelection,
    Selection,
    SelectionProblem,
    request_fingerprint,
    resolve_selection,
)
from backfiller.resolvers.asset_commands import AssetLaunch, asset_launch_from_input
from backfiller.resolvers.context import Context
from backfiller.resolvers.translate import order_of, reprocess_of
from backfiller.schema.common import UserError, UserErrorCode
from backfiller.schema.inputs import LaunchBackfillInput
from backfiller.storage.repositories import NewBackfill
from backfiller.storage.selections import key_space_of

MAX_TITLE = 500
MAX_DESCRIPTION = 10_000
MAX_TAGS = 50
MAX_TAG_KEY = 200
MAX_TAG_VALUE = 1_000
MAX_IDEMPOTENCY_KEY = 200
MAX_CONCURRENT_RUNS = 10_000
MAX_RUN_CONFIG_BYTES = 256 * 1024
MAX_KEY_LENGTH = 200


def user_error(code: UserErrorCode, message: str, field: list[str] | None) -> UserError:
    return UserError(field=field, message=message, code=code)


def _given(value: Any) -> bool:
    return value is not None and value is not strawberry.UNSET


def _text_errors(value: str, limit: int, field: list[str]) -> list[UserError]:
    if len(value) > limit:
        return [
            user_error(UserErrorCode.INVALID_ARGUMENT, f"must be at most {limit} characters", field)
        ]
    if "\x00" in value:
        return [
            user_error(UserErrorCode.INVALID_ARGUMENT, "must not contain NUL characters", field)
        ]
    return []


@dataclass(frozen=True)
class LaunchCommand:
    """A validated launch: the job, its key space and the private record to insert."""

    job: JobDefinition
    space: KeySpace
    resolved: ResolvedSelection
    new: NewBackfill
    assets: AssetLaunch | None = None
    """The plan of an asset backfill (``job`` is then its root asset's run)."""


def scalar_errors(input: LaunchBackfillInput) -> list[UserError]:
    """Checks that need neither the job nor the database."""
    errors: list[UserError] = []
    if _given(input.title):
        errors += _text_errors(input.title or "", MAX_TITLE, ["title"])
    if _given(input.description):
        errors += _text_errors(input.description or "", MAX_DESCRIPTION, ["description"])
    if _given(input.idempotency_key):
        key = input.idempotency_key or ""
        if not key.strip():
            errors.append(
                user_error(UserErrorCode.INVALID_ARGUMENT, "must not be blank", ["idempotencyKey"])
            )
        errors += _text_errors(key, MAX_IDEMPOTENCY_KEY, ["idempotencyKey"])
    if _given(input.max_concurrent_runs):
        n = input.max_concurrent_runs or 0
        if not 1 <= n <= MAX_CONCURRENT_RUNS:
            errors.append(
                user_error(
                    UserErrorCode.INVALID_ARGUMENT,
                    f"must be between 1 and {MAX_CONCURRENT_RUNS}",
                    ["maxConcurrentRuns"],
                )
            )
    tags = input.tags or []
    if len(tags) > MAX_TAGS:
        errors.append(
            user_error(UserErrorCode.INVALID_ARGUMENT, f"at most {MAX_TAGS} tags", ["tags"])
        )
    seen: set[str] = set()
    for i, tag in enumerate(tags):
        where = ["tags", str(i)]
        if not tag.key.strip():
            errors.append(
                user_error(
                    UserErrorCode.INVALID_ARGUMENT, "tag key must not be blank", [*where, "key"]
                )
            )
        errors += _text_errors(tag.key, MAX_TAG_KEY, [*where, "key"])
        errors += _text_errors(tag.value, MAX_TAG_VALUE, [*where, "value"])
        if tag.key in seen:
            errors.append(
                user_error(
                    UserErrorCode.INVALID_ARGUMENT,
                    f"tag {tag.key!r} is given twice",
                    [*where, "key"],
                )
            )
        seen.add(tag.key)
    selection = input.partitions
    if _given(selection.all) and selection.all is not True:
        errors.append(
            user_error(UserErrorCode.INVALID_ARGUMENT, "`all` must be true", ["partitions", "all"])
        )
    if _given(selection.keys):
        for i, key in enumerate(selection.keys or []):
            if len(key) > MAX_KEY_LENGTH or "\x00" in key:
                errors.append(
                    user_error(
                        UserErrorCode.INVALID_PARTITION_RANGE,
                        "not a well-formed partition key",
                        ["partitions", "keys", str(i)],
                    )
                )
                break
    if _given(selection.range):
        assert selection.range is not None
        for name in ("start", "end"):
            key = getattr(selection.range, name)
            if len(key) > MAX_KEY_LENGTH or "\x00" in key:
                errors.append(
                    user_error(
                        UserErrorCode.INVALID_PARTITION_RANGE,
                        "not a well-formed partition key",
                        ["partitions", "range", name],
                    )
                )
    if _given(input.run_config):
        import json

        try:
            size = len(json.dumps(input.run_config))
        except (TypeError, ValueError):
            size = MAX_RUN_CONFIG_BYTES + 1
        if size > MAX_RUN_CONFIG_BYTES:
            errors.append(
                user_error(
                    UserErrorCode.INVALID_RUN_CONFIG,
                    f"must be at most {MAX_RUN_CONFIG_BYTES} bytes as JSON",
                    ["runConfig"],
                )
            )
    return errors


def selection_of(input: LaunchBackfillInput) -> Selection:
    chosen = input.partitions
    if _given(chosen.range):
        assert chosen.range is not None
        return Selection(domain.SelectionKind.RANGE, chosen.range.start, chosen.range.end)
    if _given(chosen.keys):
        return Selection(domain.SelectionKind.KEYS, keys=tuple(chosen.keys or ()))
    return Selection(domain.SelectionKind.ALL)


async def command_from_input(
    ctx: Context,
    input: LaunchBackfillInput,
    *,
    creator: str | None = None,
    parent_id: int | None = None,
) -> LaunchCommand | list[UserError]:
    """Validate ``input`` against the definitions and the database; translate it."""
    errors = scalar_errors(input)
    if _given(input.target.assets):
        launch = await asset_launch_from_input(
            ctx, input, errors, creator=creator, parent_id=parent_id
        )
        if isinstance(launch, list):
            return launch
        space = launch.spaces[launch.root.name]
        return LaunchCommand(launch.root.job, space, launch.resolved, launch.new, launch)
    job_name = input.target.job if _given(input.target.job) else None
    job = ctx.definitions.get_job(job_name) if job_name else None
    if job is None:
        errors.insert(
            0,
            user_error(
                UserErrorCode.JOB_NOT_FOUND,
                f"no job named {job_name!r}" if job_name else "a target job is required",
                ["target", "job"],
            ),
        )
        return errors
    run_config = cast(dict[str, Any] | None, input.run_config if _given(input.run_config) else None)
    if not errors:
        for path, message in job.config.errors(run_config if run_config is not None else {}):
            errors.append(
                user_error(UserErrorCode.INVALID_RUN_CONFIG, message, ["runConfig", *path])
            )
    if errors:
        return errors
    selection = selection_of(input)
    now = ctx.now()
    space = await key_space_of(job.partitions, now, ctx.database)
    try:
        resolved = resolve_selection(selection, job.partitions, space)
    except SelectionProblem as problem:
        return [user_error(UserErrorCode[problem.code], problem.message, problem.field)]
    cap = ctx.services.settings.max_partitions_per_backfill
    if resolved.total > cap:
        return [
            user_error(
                UserErrorCode.RANGE_TOO_LARGE,
                f"the selection has {resolved.total} partitions; this server allows "
                f"at most {cap} per backfill",
                ["partitions"],
            )
        ]
    reprocess = reprocess_of(input.reprocess)
    order = order_of(input.order)
    tags = [(t.key, t.value) for t in (input.tags or [])]
    title = input.title if _given(input.title) else None
    description = input.description if _given(input.description) else None
    mcr = input.max_concurrent_runs if _given(input.max_concurrent_runs) else None
    normalized = {
        "job": job.name,
        "selection": [
            selection.kind.value,
            selection.range_start,
            selection.range_end,
            list(selection.keys) if selection.keys is not None else None,
        ],
        "reprocess": reprocess.value,
        "order": order.value,
        "max_concurrent_runs": mcr,
        "run_config": run_config,
        "tags": tags,
        "title": title,
        "description": description,
    }
    new = NewBackfill(
        job_name=job.name,
        selection_kind=selection.kind,
        range_start=selection.range_start,
        range_end=selection.range_end,
        keys=list(selection.keys) if selection.keys is not None else None,
        partitions_fingerprint=job.partitions.fingerprint(),
        first_index=resolved.first_index,
        total=resolved.total,
        reprocess=reprocess,
        order=order,
        max_concurrent_runs=mcr,
        run_config=run_config,
        tags=tags,
        title=title,
        description=description,
        idempotency_key=input.idempotency_key if _given(input.idempotency_key) else None,
        request_fingerprint=request_fingerprint(normalized),
        creator=creator if creator is not None else ctx.actor,
        parent_id=parent_id,
    )
    return LaunchCommand(job=job, space=space, resolved=resolved, new=new)
