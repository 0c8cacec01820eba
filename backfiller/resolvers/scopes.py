"""The scopes of a token over what a mutation is about: jobs and assets, one namespace.

A token may be limited to some names (``jobs`` of ``createApiToken``, ``--job`` of
``backfiller token create``). Definitions refuse a name that is both a job and an asset, so a
scope names either. A scoped token may launch, preview, pause, resume, cancel, update and retry
only
backfills whose every target is in its scope: the job of a job backfill, every asset of an
asset backfill (upstream and downstream ones included). Reads are not scoped.

- a launch or a preview of a job: ``target.job`` of the input, checked before it runs;
- of assets: the assets its plan runs, checked once the selection is resolved
  (``resolvers/backfills.py``);
- pause, resume, cancel, update and retry: the stored backfill's targets, read here before the
  mutation runs (a backfill's targets never change).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from backfiller.ids import parse_backfill_id
from backfiller.resolvers.context import Context
from backfiller.resolvers.policy import Refusal, job_refusal, scope_refusal
from backfiller.storage.records import BackfillRecord
from backfiller.storage.repositories import BackfillRepository

STEERING_VERBS = {
    "pauseBackfill": "pause",
    "resumeBackfill": "resume",
    "cancelBackfill": "cancel",
    "retryBackfill": "retry",
    "updateBackfill": "update",
}
"""Mutations of a stored backfill, checked against the backfill's targets."""


def targets_of(record: BackfillRecord) -> Sequence[str]:
    """The names a backfill runs: its job, or every asset of its plan."""
    if record.asset_target is not None:
        return [str(part["name"]) for part in record.asset_target["parts"]]
    return [record.job_name]


async def scope_refusal_of(ctx: Context, field: str, kwargs: dict[str, Any]) -> Refusal | None:
    """Whether a scoped token's mutation names something outside its scope (None when not,
    and always for a token without scopes)."""
    principal = ctx.principal
    if principal is None or principal.jobs is None:
        return None
    given = kwargs.get("input")
    if not isinstance(given, dict):
        return None
    verb = STEERING_VERBS.get(field)
    if verb is not None:
        return await _stored_refusal(ctx, given.get("id"), verb)
    target = given.get("target")
    job = target.get("job") if isinstance(target, dict) else None
    return job_refusal(principal, job) if isinstance(job, str) else None


async def _stored_refusal(ctx: Context, raw_id: object, verb: str) -> Refusal | None:
    pk = parse_backfill_id(raw_id) if isinstance(raw_id, str) else None
    if pk is None:
        return None  # the mutation answers BACKFILL_NOT_FOUND
    async with ctx.database.read() as session:
        record = await BackfillRepository(session).get(pk)
    if record is None:
        return None
    return scope_refusal(ctx.principal, targets_of(record), verb)


__all__ = ["STEERING_VERBS", "scope_refusal_of", "targets_of"]
