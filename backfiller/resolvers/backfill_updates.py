"""``updateBackfill``: change the limit, priority, title or description of a backfill that is
not finished, with an ``UPDATED`` event (the mutation is audited like every other).

The daemon reads a backfill's limit from its row at each claim (``storage/execution/claims``),
so a lower ``maxConcurrentRuns`` holds from the next claim: no run starts beyond it, and runs
already in flight finish.
"""

from __future__ import annotations

from typing import Any

import strawberry

from backfiller.domain import BackfillState, EventKind
from backfiller.ids import parse_backfill_id
from backfiller.resolvers.commands import user_error, user_errors_of
from backfiller.resolvers.context import Info
from backfiller.resolvers.translate import backfill_from_record
from backfiller.schema.common import UserError, UserErrorCode
from backfiller.schema.inputs import UpdateBackfillInput
from backfiller.schema.payloads import UpdateBackfillPayload
from backfiller.services.launch_checks import update_problems
from backfiller.storage.records import BackfillRecord
from backfiller.storage.repositories import BackfillRepository, EventRepository

UPDATABLE = (BackfillState.REQUESTED, BackfillState.RUNNING, BackfillState.PAUSED)
"""The states in which a backfill's settings may change: not finished, not being canceled."""

_FIELDS = (
    ("max_concurrent_runs", "maxConcurrentRuns"),
    ("priority", "priority"),
    ("title", "title"),
    ("description", "description"),
)


def _changes(input: UpdateBackfillInput) -> dict[str, Any]:
    """The fields given (null included), by their stored names."""
    return {
        name: getattr(input, name)
        for name, _ in _FIELDS
        if getattr(input, name) is not strawberry.UNSET
    }


def _input_errors(changes: dict[str, Any]) -> list[UserError]:
    if not changes:
        message = "name something to change: maxConcurrentRuns, priority, title or description"
        return [user_error(UserErrorCode.INVALID_ARGUMENT, message, None)]
    if "priority" in changes and changes["priority"] is None:
        return [user_error(UserErrorCode.INVALID_ARGUMENT, "must not be null", ["priority"])]
    problems = update_problems(
        changes.get("max_concurrent_runs"),
        changes.get("priority"),
        changes.get("title"),
        changes.get("description"),
    )
    return user_errors_of(problems)  # their paths are those of UpdateBackfillInput too


def _summary(record: BackfillRecord, changes: dict[str, Any]) -> str:
    """What changed, for the event: ``maxConcurrentRuns 8 -> 2; priority 0 -> 5``."""
    parts = []
    for name, public in _FIELDS:
        if name in changes and getattr(record, name) != changes[name]:
            if name in ("title", "description"):
                parts.append(f"{public} changed")
            else:
                parts.append(f"{public} {getattr(record, name)} -> {changes[name]}")
    return "; ".join(parts) or "nothing changed"


async def update_backfill(info: Info, input: UpdateBackfillInput) -> UpdateBackfillPayload:
    ctx = info.context
    pk = parse_backfill_id(input.id)
    not_found = user_error(
        UserErrorCode.BACKFILL_NOT_FOUND, f"no backfill has id {input.id!r}", ["id"]
    )
    if pk is None:
        return UpdateBackfillPayload(backfill=None, user_errors=[not_found])
    changes = _changes(input)
    errors = _input_errors(changes)
    if errors:
        return UpdateBackfillPayload(backfill=None, user_errors=errors)
    async with ctx.database.write() as session:
        repo = BackfillRepository(session)
        record = await repo.get(pk)
        if record is None:
            return UpdateBackfillPayload(backfill=None, user_errors=[not_found])
        summary = _summary(record, changes)
        now = ctx.now()
        if not await repo.update_settings(pk, UPDATABLE, now, **changes):
            status = backfill_from_record(record).status.value
            message = f"cannot update a backfill that is {status}"
            refused = user_error(UserErrorCode.INVALID_STATE, message, ["id"])
            return UpdateBackfillPayload(backfill=None, user_errors=[refused])
        await EventRepository(session).add(pk, EventKind.UPDATED, now, ctx.actor, summary)
        record = await repo.get(pk)
    assert record is not None
    return UpdateBackfillPayload(backfill=backfill_from_record(record), user_errors=[])


__all__ = ["UPDATABLE", "update_backfill"]
