"""Resolvers of partitions marked by hand: ``markPartitions`` and ``partitionMarks``."""

from __future__ import annotations

import strawberry

from backfiller import domain
from backfiller.ids import mark_id, parse_mark_id
from backfiller.resolvers.auth import mark_audited, success_audit
from backfiller.resolvers.commands import (
    assets_of,
    selection_from,
    user_error,
    user_errors_of,
)
from backfiller.resolvers.context import Info, PublicError
from backfiller.resolvers.policy import job_refusal
from backfiller.schema.common import UserError, UserErrorCode
from backfiller.schema.marks import (
    MarkPartitionsInput,
    MarkPartitionsPayload,
    PartitionMark,
    PartitionMarkStatus,
)
from backfiller.services.launch_types import LaunchRequest
from backfiller.services.marking import (
    MarkPlan,
    MarkRequest,
    audit_message,
    validate_mark,
)
from backfiller.services.marking import (
    mark_partitions as write_mark,
)
from backfiller.storage.marks import MarkedPart, MarkRow, PartitionsBusy, marks_of

LISTED_BUSY = 100
MAX_MARKS_PAGE = 100


def mark_status(status: PartitionMarkStatus) -> domain.MarkStatus:
    match status:
        case PartitionMarkStatus.SUCCEEDED:
            return domain.MarkStatus.SUCCEEDED
        case PartitionMarkStatus.SKIPPED:
            return domain.MarkStatus.SKIPPED


def public_mark_status(status: domain.MarkStatus) -> PartitionMarkStatus:
    match status:
        case domain.MarkStatus.SUCCEEDED:
            return PartitionMarkStatus.SUCCEEDED
        case domain.MarkStatus.SKIPPED:
            return PartitionMarkStatus.SKIPPED


def _refused(errors: list[UserError]) -> MarkPartitionsPayload:
    return MarkPartitionsPayload(marked=0, running_partitions=[], user_errors=errors)


def request_of(input: MarkPartitionsInput) -> MarkRequest | list[UserError]:
    """The private mark of a ``MarkPartitionsInput`` (pure)."""
    chosen = input.partitions
    if chosen.all is not None and chosen.all is not strawberry.UNSET and chosen.all is not True:
        message = "`all` must be true"
        return [user_error(UserErrorCode.INVALID_ARGUMENT, message, ["partitions", "all"])]
    job = input.target.job
    target = LaunchRequest(
        job=job if isinstance(job, str) else None,
        selection=selection_from(chosen),
        reprocess=domain.Reprocess.ALL,
        assets=assets_of(input.target.assets),
    )
    return MarkRequest(target, mark_status(input.status), input.reason)


def _scope_refusal(info: Info, parts: list[MarkedPart]) -> UserError | None:
    """A job-scoped token marks assets only within its scope (a job's scope is checked by
    ``Authorize`` from ``target.job``)."""
    for part in parts:
        if part.asset and job_refusal(info.context.principal, part.name) is not None:
            message = f"this token may not mark partitions of asset {part.name!r}"
            return user_error(UserErrorCode.FORBIDDEN, message, ["target", "assets", "names"])
    return None


async def mark_partitions(info: Info, input: MarkPartitionsInput) -> MarkPartitionsPayload:
    ctx = info.context
    request = request_of(input)
    if not isinstance(request, MarkRequest):
        return _refused(request)
    plan = await validate_mark(ctx.services, request)
    if not isinstance(plan, MarkPlan):
        return _refused(user_errors_of(plan))
    marked = plan.parts
    refused = _scope_refusal(info, marked)
    if refused is not None:
        return _refused([refused])
    # The success entry of the audit log (with the reason) commits with the marks.
    audit = success_audit(ctx)
    entry = audit(audit_message(marked, request)) if audit is not None else None
    outcome = await write_mark(ctx.services, marked, request, actor=ctx.actor, audit=entry)
    if isinstance(outcome, PartitionsBusy):
        listed = outcome.partitions[:LISTED_BUSY]
        named = ", ".join(listed[:20])
        if len(outcome.partitions) > 20:
            named += f" and {len(outcome.partitions) - 20} more"
        message = f"a backfill runs these partitions now, so nothing was marked: {named}"
        error = user_error(UserErrorCode.PARTITIONS_RUNNING, message, ["partitions"])
        return MarkPartitionsPayload(marked=0, running_partitions=listed, user_errors=[error])
    if entry is not None:
        mark_audited(ctx)
    return MarkPartitionsPayload(marked=outcome, running_partitions=[], user_errors=[])


def partition_mark(row: MarkRow) -> PartitionMark:
    return PartitionMark(
        id=strawberry.ID(mark_id(row.id)),
        job=row.job_name,
        partition_key=row.partition_key,
        status=public_mark_status(row.status),
        reason=row.reason,
        actor=row.actor,
        marked_at=row.marked_at,
    )


async def list_partition_marks(
    info: Info,
    job: str,
    partition_key: str | None = None,
    first: int = 20,
    before: strawberry.ID | None = None,
) -> list[PartitionMark]:
    """A job's (or asset's) partitions marked by hand, newest first; of one partition with
    ``partitionKey``; older than the mark ``before`` with it. ``first`` is at most 100."""
    if not 0 <= first <= MAX_MARKS_PAGE:
        raise PublicError(f"`first` must be between 0 and {MAX_MARKS_PAGE}")
    before_id = parse_mark_id(before) if before is not None else None
    if before is not None and before_id is None:
        raise PublicError(f"no mark has id {before!r}")
    rows = await info.context.database.query(
        lambda conn: marks_of(
            conn, job, partition_key=partition_key, before_id=before_id, limit=first
        )
    )
    return [partition_mark(row) for row in rows]


__all__ = [
    "list_partition_marks",
    "mark_partitions",
    "mark_status",
    "public_mark_status",
    "request_of",
]
