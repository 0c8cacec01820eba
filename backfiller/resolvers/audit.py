"""The audit log of mutations: what each one was about, who asked, and how it ended.

Every mutation, allowed or refused, writes exactly one entry: in the mutation's own transaction
when it succeeds and writes its own (see :func:`success_audit`), else once it has answered
(:func:`record`, called by the ``Authorize`` extension).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from backfiller.resolvers.access import run_of
from backfiller.resolvers.context import Context
from backfiller.resolvers.policy import Refusal
from backfiller.resolvers.sanitize import storable
from backfiller.schema.common import UserError
from backfiller.storage.auth import AuditEntry, AuditRepository
from backfiller.storage.auth_records import AuditOutcome

logger = logging.getLogger("backfiller.auth")


def subject_of(kwargs: dict[str, Any]) -> str | None:
    """What a mutation is about, for the audit log: an id, a name, a job."""
    given = kwargs.get("input")  # the raw argument: a dict of GraphQL names
    if not isinstance(given, dict):
        return None
    for key in ("id", "name", "trigger"):
        value = given.get(key)
        if isinstance(value, str):
            return value[:400]
    target = given.get("target")
    job = target.get("job") if isinstance(target, dict) else None
    if isinstance(job, str):
        return f"job {job}"[:400]
    return None


def result_of(payload: Any) -> str | None:
    """The id of what a mutation created or changed, for the audit log."""
    for attribute in ("backfill", "token", "evaluation"):
        found = getattr(payload, attribute, None)
        found_id = getattr(found, "id", None)
        if isinstance(found_id, str):
            return found_id
    return None


def audit_entry(
    ctx: Context,
    operation: str,
    subject: str | None,
    outcome: AuditOutcome,
    errors: list[UserError] | list[Refusal],
    message: str | None,
) -> AuditEntry:
    principal = ctx.principal
    codes = [e.code.name for e in errors]
    if errors and message is None:
        message = "; ".join(e.message for e in errors)[:2000]
    if principal is not None and principal.run_id is not None:
        actor = principal.name  # the run has its own field
    else:
        actor = ctx.actor or (principal.name if principal else None)
    return AuditEntry(
        at=ctx.now(),
        actor=actor,
        role=principal.role.value if principal else None,
        operation=operation,
        subject=storable(subject),
        outcome=outcome,
        codes=codes,
        message=storable(message),
        request_id=ctx.request_id or None,
        run_id=run_of(principal),
    )


async def record(
    ctx: Context,
    operation: str,
    subject: str | None,
    outcome: AuditOutcome,
    errors: list[UserError] | list[Refusal],
    message: str | None,
) -> None:
    """Append one audit entry; a failure to write it is logged, never shown to the caller."""
    entry = audit_entry(ctx, operation, subject, outcome, errors, message)
    try:
        async with ctx.database.write() as session:
            await AuditRepository(session).add(entry)
    except Exception:
        logger.exception("could not write the audit entry of request %s", ctx.request_id)


def success_audit(ctx: Context) -> Callable[[str], AuditEntry] | None:
    """For a mutation that writes its own success entry, in the transaction that makes its
    change (so the two commit or roll back together): the entry, given the id of the result.

    None outside a mutation. Once that transaction has committed, call ``mark_audited`` so
    that ``Authorize`` writes nothing more.
    """
    draft = ctx.audit
    if draft is None or draft.written:
        return None
    return lambda result: audit_entry(
        ctx, draft.operation, draft.subject, AuditOutcome.SUCCEEDED, [], result
    )


def mark_audited(ctx: Context) -> None:
    if ctx.audit is not None:
        ctx.audit.written = True
