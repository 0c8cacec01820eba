"""JSON answers of the public API -> the client's frozen types."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from types import MappingProxyType
from typing import Any, cast

from backfiller_client.errors import UserErrorDetail
from backfiller_client.requests import (
    AllPartitions,
    AssetSelection,
    BackfillRequest,
    Order,
    PartitionKeys,
    PartitionRange,
    PartitionSelection,
    Reprocess,
)
from backfiller_client.types import (
    Asset,
    AssetPartition,
    AssetPreview,
    Backfill,
    BackfillAsset,
    BackfillCounts,
    BackfillEvent,
    BackfillStatus,
    Job,
    PartitionMark,
    PartitionMarkStatus,
    PartitionsInfo,
    PartitionStatus,
    PartitionStatusRange,
    Preview,
    Run,
    RunStatus,
    RunWorker,
    SkippedPartition,
    Trigger,
    TriggerCatchUp,
    TriggerEvaluation,
    TriggerOutcome,
    TriggerRequestResult,
    WaitingPartition,
)

Json = Mapping[str, Any]


def when(value: str | None) -> datetime | None:
    return None if value is None else datetime.fromisoformat(value)


def required_when(value: str) -> datetime:
    return datetime.fromisoformat(value)


def frozen_json(value: Any) -> Any:
    """Read-only copy of a JSON value (mappings become read-only, lists tuples)."""
    if isinstance(value, Mapping):
        return MappingProxyType({k: frozen_json(v) for k, v in value.items()})
    if isinstance(value, list):
        return tuple(frozen_json(v) for v in value)
    return value


def tags(values: list[Json]) -> Mapping[str, str]:
    return MappingProxyType({str(t["key"]): str(t["value"]) for t in values})


def user_error(value: Json) -> UserErrorDetail:
    field = value.get("field")
    return UserErrorDetail(
        code=str(value["code"]),
        field=tuple(str(f) for f in field) if field is not None else None,
        message=str(value["message"]),
    )


def selection(value: Json) -> PartitionSelection:
    if value.get("range"):
        return PartitionRange(value["range"]["start"], value["range"]["end"])
    if value.get("keys") is not None:
        return PartitionKeys(value["keys"])
    return AllPartitions()


def counts(value: Json) -> BackfillCounts:
    return BackfillCounts(
        total=value["total"],
        pending=value["pending"],
        queued=value["queued"],
        running=value["running"],
        succeeded=value["succeeded"],
        failed=value["failed"],
        canceled=value["canceled"],
        skipped=value["skipped"],
    )


def asset_selection(target: Json) -> AssetSelection | None:
    """The ``assets`` of a ``BackfillTarget`` (None for a job's target)."""
    found = target.get("assets")
    if not found:
        return None
    return AssetSelection(found["names"], found["upstream"], found["downstream"])


def backfill(value: Json) -> Backfill:
    parent = value.get("parent")
    config = value.get("runConfig")
    target = value["target"]
    return Backfill(
        id=value["id"],
        job=target["job"],
        partitions=selection(value["partitionSelection"]),
        status=BackfillStatus(value["status"]),
        counts=counts(value["counts"]),
        reprocess=cast(Reprocess, value["reprocess"]),
        order=cast(Order, value["order"]),
        max_concurrent_runs=value.get("maxConcurrentRuns"),
        run_config=frozen_json(config) if config is not None else None,
        tags=tags(value["tags"]),
        title=value.get("title"),
        description=value.get("description"),
        error=value.get("error"),
        creator=value.get("creator"),
        parent_id=parent["id"] if parent else None,
        created_at=required_when(value["createdAt"]),
        started_at=when(value.get("startedAt")),
        ended_at=when(value.get("endedAt")),
        updated_at=required_when(value["updatedAt"]),
        assets=asset_selection(target),
        covered_assets=tuple((target.get("assets") or {}).get("assets") or ()),
        team=value.get("team"),
        priority=int(value.get("priority") or 0),
    )


def asset_preview(value: Json) -> AssetPreview:
    return AssetPreview(
        name=value["name"],
        level=value["level"],
        total=value["total"],
        runs=value["runs"],
        skipped=value["skipped"],
    )


def preview(value: Json) -> Preview:
    assets = value.get("assets")
    return Preview(
        job=value["job"],
        total=value["total"],
        runs=value["runs"],
        skipped=value["skipped"],
        first_partitions=tuple(value["firstPartitions"]),
        skipped_partitions=tuple(
            SkippedPartition(key=s["key"], reason=s["reason"]) for s in value["skippedPartitions"]
        ),
        assets=tuple(asset_preview(a) for a in assets) if assets is not None else None,
        waiting=value.get("waiting") or 0,
        waiting_partitions=tuple(
            waiting_partition(w) for w in value.get("waitingPartitions") or ()
        ),
    )


def waiting_partition(value: Json) -> WaitingPartition:
    wait = value["waitingFor"]
    return WaitingPartition(
        key=value["key"],
        run_id=wait["runId"],
        run_status=RunStatus(wait["runStatus"]),
        backfill_id=wait["backfillId"],
    )


def run(value: Json) -> Run:
    worker = value.get("worker")
    return Run(
        id=value["id"],
        backfill_id=value["backfillId"],
        job=value["job"],
        partition_key=value["partitionKey"],
        attempt=value["attempt"],
        status=RunStatus(value["status"]),
        failure_reason=value.get("failureReason"),
        error_message=value.get("errorMessage"),
        queued_at=required_when(value["queuedAt"]),
        started_at=when(value.get("startedAt")),
        ended_at=when(value.get("endedAt")),
        duration_seconds=value.get("durationSeconds"),
        worker=RunWorker(host=worker["host"], pid=worker.get("pid")) if worker else None,
        asset=value.get("asset"),
        partition_keys=tuple(value.get("partitionKeys") or (value["partitionKey"],)),
    )


def partition_mark(value: Json) -> PartitionMark:
    return PartitionMark(
        id=str(value["id"]),
        job=str(value["job"]),
        partition_key=str(value["partitionKey"]),
        status=PartitionMarkStatus(value["status"]),
        reason=str(value["reason"]),
        actor=value.get("actor"),
        marked_at=required_when(value["markedAt"]),
    )


def event(value: Json) -> BackfillEvent:
    return BackfillEvent(
        kind=value["kind"],
        at=required_when(value["at"]),
        actor=value.get("actor"),
        message=value.get("message"),
    )


def status_range(value: Json) -> PartitionStatusRange:
    return PartitionStatusRange(
        status=PartitionStatus(value["status"]),
        start_key=value["startKey"],
        end_key=value["endKey"],
        start_index=value["startIndex"],
        count=value["count"],
    )


def backfill_asset(value: Json) -> BackfillAsset:
    return BackfillAsset(
        name=value["name"],
        level=value["level"],
        counts=counts(value["counts"]),
        partition_status_ranges=tuple(status_range(r) for r in value["partitionStatusRanges"]),
    )


def partitions_info(p: Json) -> PartitionsInfo:
    return PartitionsInfo(
        kind=p["kind"],
        cadence=p.get("cadence"),
        start=when(p.get("start")),
        end=when(p.get("end")),
        timezone=p.get("timezone"),
        cron=p.get("cron"),
        key_format=p.get("keyFormat"),
        dynamic_name=p.get("dynamicName"),
        count=p["count"],
    )


def asset(value: Json) -> Asset:
    partitions = value.get("partitions")
    return Asset(
        name=value["name"],
        description=value.get("description"),
        partitions=partitions_info(partitions) if partitions else None,
        upstream=tuple(value["upstream"]),
        downstream=tuple(value["downstream"]),
        level=value["level"],
    )


def asset_partition(value: Json) -> AssetPartition:
    return AssetPartition(key=value["key"], status=RunStatus(value["status"]))


def job(value: Json) -> Job:
    schema = value.get("configSchema")
    return Job(
        name=value["name"],
        description=value.get("description"),
        partitions=partitions_info(value["partitions"]),
        max_concurrent_runs=value.get("maxConcurrentRuns"),
        timeout_seconds=value.get("timeoutSeconds"),
        max_retries=value["retryPolicy"]["maxRetries"],
        retry_delay_seconds=value["retryPolicy"]["delaySeconds"],
        config_schema=frozen_json(schema) if schema is not None else None,
        tags=tags(value["tags"]),
    )


def request(value: Json) -> BackfillRequest:
    config = value.get("runConfig")
    assets = asset_selection(value["target"])
    return BackfillRequest(
        job=value["target"]["job"] if assets is None else None,
        assets=assets,
        partitions=selection(value["partitionSelection"]),
        reprocess=cast(Reprocess, value["reprocess"]),
        order=cast(Order, value["order"]),
        max_concurrent_runs=value.get("maxConcurrentRuns"),
        run_config=dict(config) if config is not None else None,
        tags=tags(value["tags"]),
        title=value.get("title"),
        description=value.get("description"),
        idempotency_key=value.get("idempotencyKey"),
    )


def trigger_evaluation(value: Json) -> TriggerEvaluation:
    return TriggerEvaluation(
        id=value["id"],
        trigger=value["trigger"],
        outcome=TriggerOutcome(value["outcome"]),
        dry_run=value["dryRun"],
        skip_reason=value.get("skipReason"),
        error_message=value.get("errorMessage"),
        duration_seconds=value["durationSeconds"],
        actor=value.get("actor"),
        evaluated_at=required_when(value["evaluatedAt"]),
        backfills=tuple(backfill(b) for b in value["backfills"]),
        requests=tuple(
            TriggerRequestResult(
                request=request(r),
                preview=preview(r["preview"]) if r.get("preview") else None,
                backfill_id=r["backfill"]["id"] if r.get("backfill") else None,
                errors=tuple(user_error(e) for e in r["userErrors"]),
            )
            for r in value["requests"]
        ),
        scheduled_at=when(value.get("scheduledAt")),
    )


def trigger(value: Json) -> Trigger:
    last = value.get("lastEvaluation")
    return Trigger(
        name=value["name"],
        description=value.get("description"),
        enabled=value["enabled"],
        interval_seconds=value.get("intervalSeconds"),
        timeout_seconds=value["timeoutSeconds"],
        last_evaluation=trigger_evaluation(last) if last else None,
        cron=value.get("cron"),
        timezone=value.get("timezone"),
        catch_up=TriggerCatchUp(value["catchUp"]) if value.get("catchUp") else None,
        next_evaluation_at=when(value.get("nextEvaluationAt")),
        next_fire_times=tuple(required_when(t) for t in value.get("nextFireTimes") or ()),
    )
