"""Stored trigger evaluations -> public ``TriggerEvaluation``s (private -> public, on read)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import assert_never

import strawberry

from backfiller.ids import evaluation_id
from backfiller.resolvers.commands import preview_of, user_errors_of
from backfiller.resolvers.translate import (
    backfill_from_record,
    public_order,
    public_reprocess,
    public_selection,
    target_from_record,
)
from backfiller.schema.assets import AssetSelection
from backfiller.schema.backfills import BackfillTarget
from backfiller.schema.common import JSON, Tag
from backfiller.schema.triggers import TriggerEvaluation, TriggerEvaluationOutcome, TriggerRequest
from backfiller.services.backend import Backend
from backfiller.services.launch_types import LaunchRequest
from backfiller.services.trigger_requests import EvaluatedRequest, from_json
from backfiller.storage.records import BackfillRecord
from backfiller.storage.repositories import BackfillRepository
from backfiller.storage.trigger_records import TriggerEvaluationRecord, TriggerOutcome


def evaluation_outcome(outcome: TriggerOutcome) -> TriggerEvaluationOutcome:
    match outcome:
        case TriggerOutcome.LAUNCHED:
            return TriggerEvaluationOutcome.LAUNCHED
        case TriggerOutcome.SKIPPED:
            return TriggerEvaluationOutcome.SKIPPED
        case TriggerOutcome.FAILED:
            return TriggerEvaluationOutcome.FAILED
        case _:
            assert_never(outcome)


def _target(request: LaunchRequest, record: BackfillRecord | None) -> BackfillTarget:
    """A request's target; an asset request's covered assets are known once launched."""
    if record is not None:
        return target_from_record(record)
    chosen = request.assets
    if chosen is None:
        return BackfillTarget(job=request.job or "")
    names = list(chosen.names)
    return BackfillTarget(
        job=None,
        assets=AssetSelection(
            names=names, upstream=chosen.upstream, downstream=chosen.downstream, assets=names
        ),
    )


def request_from_stored(
    entry: EvaluatedRequest, backfills: dict[int, BackfillRecord]
) -> TriggerRequest:
    request = entry.request
    launched = entry.backfill_id
    record = backfills.get(launched) if launched is not None else None
    return TriggerRequest(
        target=_target(request, record),
        partition_selection=public_selection(request.selection),
        reprocess=public_reprocess(request.reprocess),
        order=public_order(request.order),
        max_concurrent_runs=request.max_concurrent_runs,
        run_config=JSON(request.run_config) if request.run_config is not None else None,
        tags=[Tag(key=k, value=v) for k, v in request.tags],
        title=request.title,
        description=request.description,
        idempotency_key=request.idempotency_key,
        preview=preview_of(entry.preview) if entry.preview is not None else None,
        backfill=backfill_from_record(record) if record is not None else None,
        user_errors=user_errors_of(list(entry.problems)),
    )


def evaluation_from_record(
    record: TriggerEvaluationRecord, backfills: dict[int, BackfillRecord]
) -> TriggerEvaluation:
    return TriggerEvaluation(
        id=strawberry.ID(evaluation_id(record.id)),
        trigger=record.trigger_name,
        outcome=evaluation_outcome(record.outcome),
        skip_reason=record.skip_reason,
        error_message=record.error_message,
        duration_seconds=record.duration_seconds,
        actor=record.actor,
        dry_run=record.dry_run,
        evaluated_at=record.evaluated_at,
        backfills=[
            backfill_from_record(backfills[i]) for i in record.backfill_ids if i in backfills
        ],
        requests=[request_from_stored(from_json(e), backfills) for e in record.requests],
        scheduled_at=record.scheduled_at,
    )


async def evaluations_from_records(
    backend: Backend, records: Sequence[TriggerEvaluationRecord]
) -> list[TriggerEvaluation]:
    """Public evaluations, with the backfills they launched loaded in one query."""
    ids = {i for r in records for i in r.backfill_ids}
    async with backend.database.read() as session:
        backfills = await BackfillRepository(session).get_many(ids)
    return [evaluation_from_record(r, backfills) for r in records]


__all__ = ["evaluation_from_record", "evaluation_outcome", "evaluations_from_records"]
