"""Marking partitions by hand: validate a mark, expand it to its partitions, record it.

``markPartitions`` names partitions as ``launchBackfill`` does (a job or assets, and a range,
keys or every partition), so a mark is validated by the one launch path
(:func:`~backfiller.services.launching.validate_launch`: the job or assets, the keys, the
server's cap) and then expanded to the pinned partitions of each job or asset. Writing it,
refused while any of them runs, is :func:`backfiller.storage.marks.write_marks`.
"""

from __future__ import annotations

from dataclasses import dataclass

from backfiller import domain
from backfiller.planning import key_at
from backfiller.services.backend import Backend
from backfiller.services.launch_types import (
    LaunchPlan,
    LaunchProblem,
    LaunchRequest,
    ProblemCode,
    problem,
)
from backfiller.services.launching import validate_launch
from backfiller.storage.auth import AuditEntry
from backfiller.storage.marks import MarkedPart, Marking, PartitionsBusy, write_marks

MAX_REASON = 2_000


@dataclass(frozen=True, slots=True)
class MarkRequest:
    """A mark as asked: the private twin of ``MarkPartitionsInput``."""

    target: LaunchRequest
    """The job or assets and the selection (only those fields count)."""
    status: domain.MarkStatus
    reason: str


def reason_problems(reason: str) -> list[LaunchProblem]:
    if not reason.strip():
        return [problem(ProblemCode.INVALID_ARGUMENT, "a reason is required", "reason")]
    if len(reason) > MAX_REASON:
        message = f"the reason is longer than {MAX_REASON} characters"
        return [problem(ProblemCode.INVALID_ARGUMENT, message, "reason")]
    return []


@dataclass(frozen=True, slots=True)
class MarkPlan:
    """A validated mark: its partitions, per job or asset."""

    parts: list[MarkedPart]


async def validate_mark(backend: Backend, request: MarkRequest) -> MarkPlan | list[LaunchProblem]:
    """The partitions that ``request`` marks, per job or asset, or why it is refused."""
    problems = reason_problems(request.reason)
    plan = await validate_launch(backend, request.target, creator=None)
    if not isinstance(plan, LaunchPlan):
        return [*plan, *problems]
    if problems:
        return problems
    return MarkPlan(parts_of(plan))


def parts_of(plan: LaunchPlan) -> list[MarkedPart]:
    """The pinned partitions of a validated selection, per job or asset, in key order."""
    if plan.assets is None:
        order, total = domain.Order.OLDEST_FIRST, plan.resolved.total
        keys = [key_at(plan.resolved, order, plan.space, p) for p in range(total)]
        return [MarkedPart(plan.job.name, keys)]
    spaces = plan.assets.spaces
    return [
        MarkedPart(part.name, [part.key_at(k, spaces[part.name]) for k in range(part.count)], True)
        for part in plan.assets.target.parts
    ]


async def mark_partitions(
    backend: Backend,
    parts: list[MarkedPart],
    request: MarkRequest,
    *,
    actor: str | None,
    audit: AuditEntry | None = None,
) -> int | PartitionsBusy:
    """Record ``parts`` as ``request.status``, with ``audit`` in the same transaction: the
    number of partitions marked, or the partitions that run now (nothing written)."""
    marking = Marking(parts, request.status, request.reason, actor, backend.clock(), audit)
    return await backend.database.transact(lambda conn: write_marks(conn, marking))


def audit_message(parts: list[MarkedPart], request: MarkRequest) -> str:
    """What the audit log says of a mark: how many, of what, as what, and why."""
    count = sum(len(p.keys) for p in parts)
    names = ", ".join(p.name for p in parts)
    return f"marked {count} partitions of {names} {request.status.value}: {request.reason}"


__all__ = [
    "MarkPlan",
    "MarkRequest",
    "audit_message",
    "mark_partitions",
    "parts_of",
    "reason_problems",
    "validate_mark",
]
