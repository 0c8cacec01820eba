"""Public launch input <-> the launch service's private request, problems and preview.

The validation itself lives in :mod:`backfiller.services.launching`; this module only
translates, exhaustively, so that GraphQL, REST and triggers get the same checks.
"""

from __future__ import annotations

from typing import Any, assert_never, cast

import strawberry

from backfiller import domain
from backfiller.planning import Selection
from backfiller.resolvers.notifications import notify_errors, webhooks_of
from backfiller.resolvers.translate import order_of, partition_wait, reprocess_of, skip_reason
from backfiller.schema.asset_backfills import AssetPreview
from backfiller.schema.assets import AssetSelectionInput
from backfiller.schema.backfills import BackfillPreview, SkippedPartition, WaitingPartition
from backfiller.schema.common import UserError, UserErrorCode
from backfiller.schema.inputs import LaunchBackfillInput, PartitionSelectionInput
from backfiller.services.launch_checks import MAX_KEY_LENGTH
from backfiller.services.launch_types import (
    AssetRequest,
    LaunchPreview,
    LaunchProblem,
    LaunchRequest,
    ProblemCode,
)

# The first step of a private field path whose public name differs.
_PUBLIC_FIELDS: dict[str, tuple[str, ...]] = {
    "job": ("target", "job"),
    "assets": ("target", "assets"),
    "max_concurrent_runs": ("maxConcurrentRuns",),
    "run_config": ("runConfig",),
    "idempotency_key": ("idempotencyKey",),
}


def user_error(code: UserErrorCode, message: str, field: list[str] | None) -> UserError:
    return UserError(field=field, message=message, code=code)


def _given(value: Any) -> bool:
    return value is not None and value is not strawberry.UNSET


def _optional(value: Any) -> Any:
    return value if _given(value) else None


def selection_of(input: LaunchBackfillInput) -> Selection:
    return selection_from(input.partitions)


def selection_from(chosen: PartitionSelectionInput) -> Selection:
    """The private selection of a ``PartitionSelectionInput`` (``all`` checked apart)."""
    if _given(chosen.range):
        assert chosen.range is not None
        return Selection(domain.SelectionKind.RANGE, chosen.range.start, chosen.range.end)
    if _given(chosen.keys):
        return Selection(domain.SelectionKind.KEYS, keys=tuple(chosen.keys or ()))
    return Selection(domain.SelectionKind.ALL)


def assets_of(chosen: AssetSelectionInput | None) -> AssetRequest | None:
    if not _given(chosen):
        return None
    assert chosen is not None
    return AssetRequest(
        names=tuple(chosen.names or ()),
        upstream=bool(chosen.upstream),
        downstream=bool(chosen.downstream),
    )


def request_from_input(input: LaunchBackfillInput) -> LaunchRequest | list[UserError]:
    """The private request of a ``LaunchBackfillInput`` (pure: no job, no database).

    Only what the private request cannot express is refused here: ``all: false``.
    """
    problems = notify_errors(input.notify)
    if problems:
        return problems
    chosen = input.partitions
    if _given(chosen.all) and chosen.all is not True:
        return [
            user_error(UserErrorCode.INVALID_ARGUMENT, "`all` must be true", ["partitions", "all"])
        ]
    return LaunchRequest(
        job=input.target.job if _given(input.target.job) else None,
        selection=selection_of(input),
        reprocess=reprocess_of(input.reprocess),
        order=order_of(input.order),
        max_concurrent_runs=_optional(input.max_concurrent_runs),
        priority=_optional(input.priority),
        run_config=cast(dict[str, Any] | None, _optional(input.run_config)),
        tags=tuple((t.key, t.value) for t in (input.tags or [])),
        title=_optional(input.title),
        description=_optional(input.description),
        idempotency_key=_optional(input.idempotency_key),
        notify=webhooks_of(input.notify),
        assets=assets_of(input.target.assets),
    )


def error_code(code: ProblemCode) -> UserErrorCode:
    match code:
        case ProblemCode.JOB_NOT_FOUND:
            return UserErrorCode.JOB_NOT_FOUND
        case ProblemCode.PARTITION_NOT_FOUND:
            return UserErrorCode.PARTITION_NOT_FOUND
        case ProblemCode.INVALID_PARTITION_RANGE:
            return UserErrorCode.INVALID_PARTITION_RANGE
        case ProblemCode.EMPTY_SELECTION:
            return UserErrorCode.EMPTY_SELECTION
        case ProblemCode.INVALID_RUN_CONFIG:
            return UserErrorCode.INVALID_RUN_CONFIG
        case ProblemCode.INVALID_ARGUMENT:
            return UserErrorCode.INVALID_ARGUMENT
        case ProblemCode.IDEMPOTENCY_KEY_REUSED:
            return UserErrorCode.IDEMPOTENCY_KEY_REUSED
        case ProblemCode.RANGE_TOO_LARGE:
            return UserErrorCode.RANGE_TOO_LARGE
        case ProblemCode.ASSET_NOT_FOUND:
            return UserErrorCode.ASSET_NOT_FOUND
        case _:
            assert_never(code)


def public_field(path: tuple[str, ...] | None) -> list[str] | None:
    """A private field path as a path in ``LaunchBackfillInput``."""
    if not path:
        return None
    head = _PUBLIC_FIELDS.get(path[0], path[:1])
    return [*head, *path[1:]]


def user_error_of(problem: LaunchProblem) -> UserError:
    return user_error(error_code(problem.code), problem.message, public_field(problem.field))


def user_errors_of(problems: list[LaunchProblem]) -> list[UserError]:
    return [user_error_of(p) for p in problems]


def preview_of(preview: LaunchPreview) -> BackfillPreview:
    return BackfillPreview(
        job=preview.job,
        total=preview.total,
        runs=preview.runs,
        skipped=preview.skipped,
        first_partitions=list(preview.first_partitions),
        skipped_partitions=[
            SkippedPartition(key=key, reason=skip_reason(reason))
            for key, reason in preview.skipped_partitions
        ],
        waiting=preview.waiting,
        waiting_partitions=[
            WaitingPartition(key=key, waiting_for=partition_wait(run))
            for key, run in preview.waiting_partitions
        ],
        assets=(
            [
                AssetPreview(
                    name=a.name,
                    level=a.level,
                    total=a.total,
                    runs=a.runs,
                    skipped=a.skipped,
                    ranged_runs=a.ranged_runs,
                )
                for a in preview.assets
            ]
            if preview.assets is not None
            else None
        ),
        ranged_runs=preview.ranged_runs,
    )


__all__ = [
    "MAX_KEY_LENGTH",
    "preview_of",
    "request_from_input",
    "user_error",
    "user_error_of",
    "user_errors_of",
]
