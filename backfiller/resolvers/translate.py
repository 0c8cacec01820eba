"""Private records -> public types, and public enums <-> stored states.

Every mapping is exhaustive (``match`` ending in ``assert_never``): a new stored state cannot
leak into the public contract, nor be forgotten.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, assert_never

import strawberry

from backfiller import domain
from backfiller.ids import backfill_id, run_id
from backfiller.planning import Selection
from backfiller.schema.assets import AssetSelection
from backfiller.schema.backfills import (
    Backfill,
    BackfillCounts,
    BackfillTarget,
    PartitionRange,
    PartitionSelection,
    PartitionWait,
    Run,
    RunWorker,
)
from backfiller.schema.common import JSON, Tag
from backfiller.schema.enums import (
    BackfillEventKind,
    BackfillOrder,
    BackfillStatus,
    PartitionStatus,
    Reprocess,
    RunFailureReason,
    RunStatus,
    SkipReason,
)
from backfiller.storage.backfill_reads import BackfillRow, JsonArray, json_value
from backfiller.storage.execution.waits import ActiveRun
from backfiller.storage.records import BackfillRecord, RunRecord

Backfillish = BackfillRecord | BackfillRow
"""A backfill as stored: an ORM record, or a Core row of the same columns (JSON aside)."""


def backfill_status(state: domain.BackfillState) -> BackfillStatus:
    match state:
        case domain.BackfillState.REQUESTED:
            return BackfillStatus.REQUESTED
        case domain.BackfillState.RUNNING:
            return BackfillStatus.RUNNING
        case domain.BackfillState.PAUSED:
            return BackfillStatus.PAUSED
        case domain.BackfillState.CANCELING:
            return BackfillStatus.CANCELING
        case domain.BackfillState.CANCELED:
            return BackfillStatus.CANCELED
        case domain.BackfillState.COMPLETED_SUCCESS:
            return BackfillStatus.COMPLETED_SUCCESS
        case domain.BackfillState.COMPLETED_FAILED:
            return BackfillStatus.COMPLETED_FAILED
        case domain.BackfillState.FAILED:
            return BackfillStatus.FAILED
        case _:
            assert_never(state)


def backfill_state(status: BackfillStatus) -> domain.BackfillState:
    match status:
        case BackfillStatus.REQUESTED:
            return domain.BackfillState.REQUESTED
        case BackfillStatus.RUNNING:
            return domain.BackfillState.RUNNING
        case BackfillStatus.PAUSED:
            return domain.BackfillState.PAUSED
        case BackfillStatus.CANCELING:
            return domain.BackfillState.CANCELING
        case BackfillStatus.CANCELED:
            return domain.BackfillState.CANCELED
        case BackfillStatus.COMPLETED_SUCCESS:
            return domain.BackfillState.COMPLETED_SUCCESS
        case BackfillStatus.COMPLETED_FAILED:
            return domain.BackfillState.COMPLETED_FAILED
        case BackfillStatus.FAILED:
            return domain.BackfillState.FAILED
        case _:
            assert_never(status)


def partition_status(state: domain.SlotState) -> PartitionStatus:
    match state:
        case domain.SlotState.PENDING:
            return PartitionStatus.PENDING
        case domain.SlotState.QUEUED:
            return PartitionStatus.QUEUED
        case domain.SlotState.RUNNING:
            return PartitionStatus.RUNNING
        case domain.SlotState.SUCCEEDED:
            return PartitionStatus.SUCCEEDED
        case domain.SlotState.FAILED:
            return PartitionStatus.FAILED
        case domain.SlotState.CANCELED:
            return PartitionStatus.CANCELED
        case domain.SlotState.SKIPPED:
            return PartitionStatus.SKIPPED
        case _:
            assert_never(state)


def slot_state(status: PartitionStatus) -> domain.SlotState:
    match status:
        case PartitionStatus.PENDING:
            return domain.SlotState.PENDING
        case PartitionStatus.QUEUED:
            return domain.SlotState.QUEUED
        case PartitionStatus.RUNNING:
            return domain.SlotState.RUNNING
        case PartitionStatus.SUCCEEDED:
            return domain.SlotState.SUCCEEDED
        case PartitionStatus.FAILED:
            return domain.SlotState.FAILED
        case PartitionStatus.CANCELED:
            return domain.SlotState.CANCELED
        case PartitionStatus.SKIPPED:
            return domain.SlotState.SKIPPED
        case _:
            assert_never(status)


def run_status(state: domain.RunState) -> RunStatus:
    match state:
        case domain.RunState.QUEUED:
            return RunStatus.QUEUED
        case domain.RunState.RUNNING:
            return RunStatus.RUNNING
        case domain.RunState.SUCCESS:
            return RunStatus.SUCCESS
        case domain.RunState.FAILED:
            return RunStatus.FAILED
        case domain.RunState.CANCELED:
            return RunStatus.CANCELED
        case domain.RunState.SKIPPED:  # a partition's latest state, never a run's
            return RunStatus.SKIPPED
        case _:
            assert_never(state)


def partition_wait(run: ActiveRun) -> PartitionWait:
    """The active run of another backfill that a partition waits for."""
    return PartitionWait(
        run_id=strawberry.ID(run_id(run.run_id)),
        run_status=run_status(run.status),
        backfill_id=strawberry.ID(backfill_id(run.backfill_id)),
        _backfill_pk=run.backfill_id,
    )


def run_state(status: RunStatus) -> domain.RunState:
    match status:
        case RunStatus.QUEUED:
            return domain.RunState.QUEUED
        case RunStatus.RUNNING:
            return domain.RunState.RUNNING
        case RunStatus.SUCCESS:
            return domain.RunState.SUCCESS
        case RunStatus.FAILED:
            return domain.RunState.FAILED
        case RunStatus.CANCELED:
            return domain.RunState.CANCELED
        case RunStatus.SKIPPED:
            return domain.RunState.SKIPPED
        case _:
            assert_never(status)


def partition_status_of_run(state: domain.RunState) -> PartitionStatus:
    """A (job, partition)'s status across backfills, from its latest run."""
    match state:
        case domain.RunState.QUEUED:
            return PartitionStatus.QUEUED
        case domain.RunState.RUNNING:
            return PartitionStatus.RUNNING
        case domain.RunState.SUCCESS:
            return PartitionStatus.SUCCEEDED
        case domain.RunState.FAILED:
            return PartitionStatus.FAILED
        case domain.RunState.CANCELED:
            return PartitionStatus.CANCELED
        case domain.RunState.SKIPPED:
            return PartitionStatus.SKIPPED
        case _:
            assert_never(state)


def failure_reason(reason: domain.FailureReason | None) -> RunFailureReason | None:
    match reason:
        case None:
            return None
        case domain.FailureReason.ERROR:
            return RunFailureReason.ERROR
        case domain.FailureReason.TIMEOUT:
            return RunFailureReason.TIMEOUT
        case domain.FailureReason.WORKER_LOST:
            return RunFailureReason.WORKER_LOST
        case _:
            assert_never(reason)


def reprocess_of(value: Reprocess | None) -> domain.Reprocess:
    match value:
        case None | Reprocess.MISSING:
            return domain.Reprocess.MISSING
        case Reprocess.FAILED_AND_MISSING:
            return domain.Reprocess.FAILED_AND_MISSING
        case Reprocess.ALL:
            return domain.Reprocess.ALL
        case _:
            assert_never(value)


def public_reprocess(value: domain.Reprocess) -> Reprocess:
    match value:
        case domain.Reprocess.MISSING:
            return Reprocess.MISSING
        case domain.Reprocess.FAILED_AND_MISSING:
            return Reprocess.FAILED_AND_MISSING
        case domain.Reprocess.ALL:
            return Reprocess.ALL
        case _:
            assert_never(value)


def order_of(value: BackfillOrder | None) -> domain.Order:
    match value:
        case None | BackfillOrder.OLDEST_FIRST:
            return domain.Order.OLDEST_FIRST
        case BackfillOrder.NEWEST_FIRST:
            return domain.Order.NEWEST_FIRST
        case _:
            assert_never(value)


def public_order(value: domain.Order) -> BackfillOrder:
    match value:
        case domain.Order.OLDEST_FIRST:
            return BackfillOrder.OLDEST_FIRST
        case domain.Order.NEWEST_FIRST:
            return BackfillOrder.NEWEST_FIRST
        case _:
            assert_never(value)


def skip_reason(value: domain.SkipReason) -> SkipReason:
    match value:
        case domain.SkipReason.ALREADY_SUCCEEDED:
            return SkipReason.ALREADY_SUCCEEDED
        case domain.SkipReason.ALREADY_FAILED:
            return SkipReason.ALREADY_FAILED
        case domain.SkipReason.UPSTREAM_FAILED:
            return SkipReason.UPSTREAM_FAILED
        case domain.SkipReason.MARKED_SKIPPED:
            return SkipReason.MARKED_SKIPPED
        case _:
            assert_never(value)


def event_kind(value: domain.EventKind) -> BackfillEventKind:
    match value:
        case domain.EventKind.LAUNCHED:
            return BackfillEventKind.LAUNCHED
        case domain.EventKind.STARTED:
            return BackfillEventKind.STARTED
        case domain.EventKind.PAUSED:
            return BackfillEventKind.PAUSED
        case domain.EventKind.RESUMED:
            return BackfillEventKind.RESUMED
        case domain.EventKind.CANCEL_REQUESTED:
            return BackfillEventKind.CANCEL_REQUESTED
        case domain.EventKind.CANCELED:
            return BackfillEventKind.CANCELED
        case domain.EventKind.RUN_FAILED:
            return BackfillEventKind.RUN_FAILED
        case domain.EventKind.RETRIED:
            return BackfillEventKind.RETRIED
        case domain.EventKind.COMPLETED:
            return BackfillEventKind.COMPLETED
        case domain.EventKind.FAILED:
            return BackfillEventKind.FAILED
        case domain.EventKind.UPDATED:
            return BackfillEventKind.UPDATED
        case _:
            assert_never(value)


def counts_from_record(record: Backfillish) -> BackfillCounts:
    return BackfillCounts.of(
        total=record.total,
        pending=record.pending,
        queued=record.queued,
        running=record.running,
        succeeded=record.succeeded,
        failed=record.failed,
        canceled=record.canceled,
        skipped=record.skipped,
    )


def public_selection(selection: Selection) -> PartitionSelection:
    keys = list(selection.keys) if selection.keys is not None else None
    return _selection(selection.kind, selection.range_start, selection.range_end, keys)


def _selection(
    kind: domain.SelectionKind,
    range_start: str | None,
    range_end: str | None,
    keys: Sequence[str] | None,
) -> PartitionSelection:
    match kind:
        case domain.SelectionKind.RANGE:
            assert range_start is not None and range_end is not None
            return PartitionSelection(range=PartitionRange(start=range_start, end=range_end))
        case domain.SelectionKind.KEYS:
            return PartitionSelection(keys=keys if keys is not None else [])
        case domain.SelectionKind.ALL:
            return PartitionSelection(all=True)
        case _:
            assert_never(kind)


def target_from_record(record: BackfillRecord) -> BackfillTarget:
    return _target(record.kind, record.job_name, record.asset_target)


def _target(
    kind: domain.BackfillKind, job_name: str, asset_target: dict[str, Any] | None
) -> BackfillTarget:
    match kind:
        case domain.BackfillKind.JOB:
            return BackfillTarget(job=job_name)
        case domain.BackfillKind.ASSETS:
            assert asset_target is not None
            return BackfillTarget(
                job=None,
                assets=AssetSelection(
                    names=list(asset_target["names"]),
                    upstream=bool(asset_target["upstream"]),
                    downstream=bool(asset_target["downstream"]),
                    assets=[str(p["name"]) for p in asset_target["parts"]],
                ),
            )
        case _:
            assert_never(kind)


def backfill_from_record(record: BackfillRecord) -> Backfill:
    """An ORM record (its JSON columns decoded by SQLAlchemy)."""
    keys = list(record.keys) if record.keys is not None else None
    return _backfill(
        record,
        _target(record.kind, record.job_name, record.asset_target),
        _selection(record.selection_kind, record.range_start, record.range_end, keys),
        record.run_config,
        [Tag(key=k, value=v) for k, v in record.tags],
    )


def backfill_from_row(row: BackfillRow) -> Backfill:
    """A row of :mod:`~backfiller.storage.backfill_reads`: its JSON text is decoded here when
    it is null-free and cheap (target, run config), and when first read for the lists (tags,
    explicit keys), so a page decodes only what the request returns."""
    kind = row.selection_kind
    keys = JsonArray(row.keys_json, str) if kind is domain.SelectionKind.KEYS else None
    return _backfill(
        row,
        _target(row.kind, row.job_name, json_value(row.asset_target_json)),
        _selection(kind, row.range_start, row.range_end, keys),
        json_value(row.run_config_json),
        JsonArray(row.tags_json, _tag),
    )


def _tag(pair: Any) -> Tag:
    key, value = pair
    return Tag(key=key, value=value)


# The mappings above, looked up once per stored value for the rows of a page.
_STATUSES = {state: backfill_status(state) for state in domain.BackfillState}
_REPROCESS = {value: public_reprocess(value) for value in domain.Reprocess}
_ORDERS = {value: public_order(value) for value in domain.Order}


def _backfill(
    stored: Backfillish,
    target: BackfillTarget,
    selection: PartitionSelection,
    run_config: Any,
    tags: Sequence[Tag],
) -> Backfill:
    return Backfill(
        id=strawberry.ID(backfill_id(stored.id)),
        title=stored.title,
        description=stored.description,
        target=target,
        partition_selection=selection,
        status=_STATUSES[stored.status],
        error=stored.error,
        reprocess=_REPROCESS[stored.reprocess],
        order=_ORDERS[stored.order],
        max_concurrent_runs=stored.max_concurrent_runs,
        run_config=JSON(run_config) if run_config is not None else None,
        tags=tags,
        creator=stored.creator,
        team=stored.team,
        priority=stored.priority,
        created_at=stored.created_at,
        started_at=stored.started_at,
        ended_at=stored.ended_at,
        updated_at=stored.updated_at,
        counts=counts_from_record(stored),
        _pk=stored.id,
        _parent_pk=stored.parent_id,
    )


def run_from_record(record: RunRecord) -> Run:
    return Run(
        id=strawberry.ID(run_id(record.id)),
        job=record.job_name,
        partition_key=record.partition_key,
        attempt=record.attempt,
        status=run_status(record.status),
        failure_reason=failure_reason(record.failure_reason),
        error_message=record.error_message,
        queued_at=record.queued_at,
        started_at=record.started_at,
        ended_at=record.ended_at,
        backfill_id=strawberry.ID(backfill_id(record.backfill_id)),
        worker=run_worker(record.worker),
        _pk=record.id,
        _backfill_pk=record.backfill_id,
        _lead_pk=record.lead_run_id
        if record.lead_run_id is not None
        else (record.id if record.partition_count > 1 else None),
        _range_size=record.partition_count if record.lead_run_id is None else None,
    )


def run_worker(stored: str | None) -> RunWorker | None:
    """``host:pid`` as stored by the launchers; a name without a pid keeps it all as host."""
    if not stored:
        return None
    host, _, pid = stored.rpartition(":")
    if host and pid.isdigit():
        return RunWorker(host=host, pid=int(pid))
    return RunWorker(host=stored, pid=None)
