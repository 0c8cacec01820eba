"""What each client method sends and how its answer is read, shared by the sync and async
clients: only the transport differs between them."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Generic, Literal, TypeVar

import httpx

from backfiller_client import _parse
from backfiller_client.errors import (
    BackfillerAPIError,
    BackfillerAuthError,
    BackfillerUserError,
    UserErrorDetail,
)
from backfiller_client.requests import AssetSelection, BackfillRequest, PartitionSelection
from backfiller_client.types import (
    Asset,
    AssetPartition,
    Backfill,
    BackfillAsset,
    BackfillEvent,
    BackfillStatus,
    Job,
    PartitionMark,
    PartitionStatusRange,
    Preview,
    Run,
    RunStatus,
    Trigger,
    TriggerEvaluation,
)

T = TypeVar("T")
Json = Mapping[str, Any]

RetryInclude = Literal["FAILED", "CANCELED", "NOT_RUN"]
MarkStatus = Literal["SUCCEEDED", "SKIPPED"]
AUTH_CODES = frozenset({"UNAUTHENTICATED", "FORBIDDEN"})
MAX_PAGE_SIZE = 100
MAX_ASSET_PAGE_SIZE = 1000


@dataclass(frozen=True, slots=True)
class Call(Generic[T]):
    """One operation to send, and how to read its ``data``."""

    operation: str
    variables: Mapping[str, Any]
    read: Callable[[Json], T]


@dataclass(frozen=True, slots=True)
class Page(Generic[T]):
    items: list[T]
    next_cursor: str | None


def endpoint_of(url: str) -> str:
    """``{url}/graphql/v1``, unless ``url`` already names a GraphQL endpoint."""
    base = url.rstrip("/")
    if base.endswith("/graphql/v1"):
        return base
    return f"{base}/graphql/v1"


def request_headers(
    token: str | None, headers: Mapping[str, str] | None, version: str
) -> dict[str, str]:
    found = {"User-Agent": f"backfiller-python/{version}", "Accept": "application/json"}
    if token:
        found["Authorization"] = f"Bearer {token}"
    found.update(headers or {})
    return found


def read_response(operation: str, response: httpx.Response) -> Json:
    """The ``data`` of a GraphQL answer, or the transport exception that fits."""
    request_id = response.headers.get("x-request-id")
    status = response.status_code
    try:
        body = response.json()
    except ValueError:
        body = None
    errors = body.get("errors") if isinstance(body, dict) else None
    messages = [str(e.get("message", e)) for e in errors or [] if isinstance(e, dict)]
    codes = [
        str((e.get("extensions") or {}).get("code"))
        for e in errors or []
        if isinstance(e, dict) and (e.get("extensions") or {}).get("code")
    ]
    detail = "; ".join(messages)
    if status in (401, 403) or AUTH_CODES.intersection(codes):
        raise BackfillerAuthError(
            f"the server refused the credentials (HTTP {status})"
            + (f": {detail}" if detail else ""),
            status_code=status,
            messages=messages,
            codes=codes,
            request_id=request_id,
        )
    if status >= 400 and not (status < 500 and errors):
        raise BackfillerAPIError(
            f"HTTP {status}" + (f": {detail}" if detail else ""),
            status_code=status,
            messages=messages,
            codes=codes,
            request_id=request_id,
        )
    if not isinstance(body, dict):
        raise BackfillerAPIError(
            f"the answer is not a JSON object (HTTP {status})",
            status_code=status,
            request_id=request_id,
        )
    if errors:
        raise BackfillerAPIError(
            f"{detail or 'the server reported errors'}",
            status_code=status,
            messages=messages,
            codes=codes,
            request_id=request_id,
        )
    data = body.get("data")
    if not isinstance(data, dict):
        raise BackfillerAPIError(
            "the answer has no data", status_code=status, request_id=request_id
        )
    return data


def read_data(call: Call[T], data: Json) -> T:
    """Apply ``call.read``; an answer of an unexpected shape is a transport problem."""
    try:
        return call.read(data)
    except BackfillerUserError:
        raise
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        raise BackfillerAPIError(f"unexpected answer ({type(exc).__name__}: {exc})") from exc


def _payload(operation: str, data: Json, field: str) -> Json:
    payload: Json = data[field]
    errors = payload.get("userErrors") or []
    if errors:
        raise BackfillerUserError(operation, [_parse.user_error(e) for e in errors])
    return payload


def not_found(operation: str, backfill_id: str) -> BackfillerUserError:
    return BackfillerUserError(
        operation,
        [UserErrorDetail("BACKFILL_NOT_FOUND", ("id",), f"no backfill has id {backfill_id!r}")],
    )


def _backfill_payload(operation: str, field: str) -> Callable[[Json], Backfill]:
    def read(data: Json) -> Backfill:
        return _parse.backfill(_payload(operation, data, field)["backfill"])

    return read


def check_page_size(page_size: int, most: int = MAX_PAGE_SIZE) -> int:
    if not 1 <= page_size <= most:
        raise ValueError(f"page_size must be between 1 and {most}")
    return page_size


def api_version() -> Call[str]:
    return Call("PyApiVersion", {}, lambda d: str(d["apiVersion"]))


def launch_backfill(request: BackfillRequest) -> Call[Backfill]:
    if not isinstance(request, BackfillRequest):
        raise TypeError("launch_backfill takes a backfiller.BackfillRequest")
    return Call(
        "PyLaunchBackfill",
        {"input": request.as_graphql_input()},
        _backfill_payload("PyLaunchBackfill", "launchBackfill"),
    )


def preview_backfill(request: BackfillRequest) -> Call[Preview]:
    if not isinstance(request, BackfillRequest):
        raise TypeError("preview_backfill takes a backfiller.BackfillRequest")

    def read(data: Json) -> Preview:
        return _parse.preview(_payload("PyPreviewBackfill", data, "previewBackfill")["preview"])

    return Call("PyPreviewBackfill", {"input": request.as_graphql_input()}, read)


def get_backfill(backfill_id: str) -> Call[Backfill | None]:
    def read(data: Json) -> Backfill | None:
        found = data["backfill"]
        return _parse.backfill(found) if found else None

    return Call("PyGetBackfill", {"id": backfill_id}, read)


def backfills_page(
    statuses: Iterable[BackfillStatus | str] | None,
    job: str | None,
    tag: tuple[str, str] | None,
    first: int,
    after: str | None,
    more: Mapping[str, Any] | None = None,
) -> Call[Page[Backfill]]:
    filter: dict[str, Any] = dict(more or {})
    if statuses is not None:
        filter["statuses"] = [BackfillStatus.known(s).value for s in statuses]
    if job is not None:
        filter["job"] = job
    if tag is not None:
        filter["tag"] = {"key": tag[0], "value": tag[1]}

    def read(data: Json) -> Page[Backfill]:
        connection = data["backfills"]
        info = connection["pageInfo"]
        return Page(
            [_parse.backfill(e["node"]) for e in connection["edges"]],
            info["endCursor"] if info["hasNextPage"] else None,
        )

    return Call(
        "PyListBackfills",
        {"first": first, "after": after, "filter": filter or None},
        read,
    )


def list_filters(
    asset: str | None = None,
    creator: str | None = None,
    tags: Mapping[str, str] | None = None,
    search: str | None = None,
    created_after: datetime | None = None,
    created_before: datetime | None = None,
    team: str | None = None,
) -> dict[str, Any]:
    """The ``BackfillFilter`` fields beyond statuses, job and one tag (those given)."""
    filter: dict[str, Any] = {"asset": asset, "creator": creator, "search": search, "team": team}
    if tags:
        filter["tags"] = [{"key": k, "value": v} for k, v in tags.items()]
    for name, value in (("createdAfter", created_after), ("createdBefore", created_before)):
        if value is not None:
            filter[name] = value.isoformat()
    return {k: v for k, v in filter.items() if v is not None}


def steer_backfill(verb: Literal["Pause", "Resume", "Cancel"], backfill_id: str) -> Call[Backfill]:
    operation = f"Py{verb}Backfill"
    field = f"{verb.lower()}Backfill"
    return Call(operation, {"id": backfill_id}, _backfill_payload(operation, field))


UNCHANGED: Any = object()
"""What an argument of ``update_backfill`` is when it is not to change."""


def update_backfill(
    backfill_id: str,
    max_concurrent_runs: int | None = UNCHANGED,
    priority: int = UNCHANGED,
    title: str | None = UNCHANGED,
    description: str | None = UNCHANGED,
) -> Call[Backfill]:
    given = {
        "maxConcurrentRuns": max_concurrent_runs,
        "priority": priority,
        "title": title,
        "description": description,
    }
    changes = {k: v for k, v in given.items() if v is not UNCHANGED}
    return Call(
        "PyUpdateBackfill",
        {"input": {"id": backfill_id, **changes}},
        _backfill_payload("PyUpdateBackfill", "updateBackfill"),
    )


def retry_backfill(
    backfill_id: str, include: Sequence[RetryInclude], idempotency_key: str | None
) -> Call[Backfill]:
    return Call(
        "PyRetryBackfill",
        {
            "input": {
                "id": backfill_id,
                "include": list(include),
                "idempotencyKey": idempotency_key,
            }
        },
        _backfill_payload("PyRetryBackfill", "retryBackfill"),
    )


def runs_page(
    backfill_id: str,
    statuses: Iterable[RunStatus | str] | None,
    first: int,
    after: str | None,
) -> Call[Page[Run]]:
    def read(data: Json) -> Page[Run]:
        found = data["backfill"]
        if found is None:
            raise not_found("PyBackfillRuns", backfill_id)
        connection = found["runs"]
        info = connection["pageInfo"]
        return Page(
            [_parse.run(e["node"]) for e in connection["edges"]],
            info["endCursor"] if info["hasNextPage"] else None,
        )

    return Call(
        "PyBackfillRuns",
        {
            "id": backfill_id,
            "first": first,
            "after": after,
            "statuses": (
                [RunStatus.known(s).value for s in statuses] if statuses is not None else None
            ),
        },
        read,
    )


def events_page(
    backfill_id: str, newest_first: bool, first: int, after: str | None
) -> Call[Page[BackfillEvent]]:
    def read(data: Json) -> Page[BackfillEvent]:
        found = data["backfill"]
        if found is None:
            raise not_found("PyBackfillEvents", backfill_id)
        connection = found["events"]
        info = connection["pageInfo"]
        return Page(
            [_parse.event(e["node"]) for e in connection["edges"]],
            info["endCursor"] if info["hasNextPage"] else None,
        )

    return Call(
        "PyBackfillEvents",
        {"id": backfill_id, "first": first, "after": after, "newestFirst": newest_first},
        read,
    )


def partition_status_ranges(backfill_id: str) -> Call[list[PartitionStatusRange]]:
    def read(data: Json) -> list[PartitionStatusRange]:
        found = data["backfill"]
        if found is None:
            raise not_found("PyPartitionStatusRanges", backfill_id)
        return [_parse.status_range(r) for r in found["partitionStatusRanges"]]

    return Call("PyPartitionStatusRanges", {"id": backfill_id}, read)


def backfill_assets(backfill_id: str) -> Call[list[BackfillAsset]]:
    def read(data: Json) -> list[BackfillAsset]:
        found = data["backfill"]
        if found is None:
            raise not_found("PyBackfillAssets", backfill_id)
        return [_parse.backfill_asset(a) for a in found["assets"]]

    return Call("PyBackfillAssets", {"id": backfill_id}, read)


def assets() -> Call[list[Asset]]:
    return Call("PyAssets", {}, lambda d: [_parse.asset(a) for a in d["assets"]])


def asset(name: str) -> Call[Asset | None]:
    return Call(
        "PyAsset", {"name": name}, lambda d: _parse.asset(d["asset"]) if d["asset"] else None
    )


def asset_partitions_page(name: str, first: int, after: str | None) -> Call[Page[AssetPartition]]:
    def read(data: Json) -> Page[AssetPartition]:
        found = data["asset"]
        if found is None:
            raise BackfillerUserError(
                "PyAssetPartitions",
                [UserErrorDetail("ASSET_NOT_FOUND", ("name",), f"no asset named {name!r}")],
            )
        items = [_parse.asset_partition(p) for p in found["latestStatuses"]]
        # A list keyed by partition key: a full page may have more after its last key.
        return Page(items, items[-1].key if len(items) == first else None)

    return Call("PyAssetPartitions", {"name": name, "first": first, "after": after}, read)


def jobs() -> Call[list[Job]]:
    return Call("PyJobs", {}, lambda d: [_parse.job(j) for j in d["jobs"]])


def job(name: str) -> Call[Job | None]:
    return Call("PyJob", {"name": name}, lambda d: _parse.job(d["job"]) if d["job"] else None)


def dynamic_partitions(verb: Literal["Add", "Delete"], name: str, keys: Sequence[str]) -> Call[int]:
    if isinstance(keys, str):
        raise TypeError("keys must be a list of partition keys, not one string")
    operation = f"Py{verb}DynamicPartitions"
    field = f"{verb.lower()}DynamicPartitions"

    def read(data: Json) -> int:
        return int(_payload(operation, data, field)["keysChanged"])

    return Call(operation, {"input": {"name": name, "keys": list(keys)}}, read)


def mark_partitions(
    job: str | None,
    partitions: PartitionSelection,
    status: MarkStatus,
    reason: str,
    assets: AssetSelection | None,
) -> Call[int]:
    """``markPartitions``: the target and selection as a launch takes them."""
    if status not in ("SUCCEEDED", "SKIPPED"):
        raise ValueError("status must be SUCCEEDED or SKIPPED")
    launch = BackfillRequest(job=job, partitions=partitions, assets=assets).as_graphql_input()
    given = {
        "target": launch["target"],
        "partitions": launch["partitions"],
        "status": status,
        "reason": reason,
    }

    def read(data: Json) -> int:
        return int(_payload("PyMarkPartitions", data, "markPartitions")["marked"])

    return Call("PyMarkPartitions", {"input": given}, read)


def partition_marks(job: str, partition_key: str | None, first: int) -> Call[list[PartitionMark]]:
    def read(data: Json) -> list[PartitionMark]:
        return [_parse.partition_mark(m) for m in data["partitionMarks"]]

    variables = {"job": job, "partitionKey": partition_key, "first": check_page_size(first)}
    return Call("PyPartitionMarks", variables, read)


def evaluate_trigger(name: str, dry_run: bool) -> Call[TriggerEvaluation]:
    def read(data: Json) -> TriggerEvaluation:
        payload = _payload("PyEvaluateTrigger", data, "evaluateTrigger")
        return _parse.trigger_evaluation(payload["evaluation"])

    return Call("PyEvaluateTrigger", {"input": {"name": name, "dryRun": dry_run}}, read)


def set_trigger_enabled(name: str, enabled: bool) -> Call[Trigger]:
    def read(data: Json) -> Trigger:
        payload = _payload("PySetTriggerEnabled", data, "setTriggerEnabled")
        return _parse.trigger(payload["trigger"])

    return Call("PySetTriggerEnabled", {"input": {"name": name, "enabled": enabled}}, read)


def triggers() -> Call[list[Trigger]]:
    return Call("PyTriggers", {}, lambda d: [_parse.trigger(t) for t in d["triggers"]])


def trigger(name: str) -> Call[Trigger | None]:
    return Call(
        "PyTrigger",
        {"name": name},
        lambda d: _parse.trigger(d["trigger"]) if d["trigger"] else None,
    )


def trigger_evaluations_page(
    name: str, first: int, after: str | None
) -> Call[Page[TriggerEvaluation]]:
    def read(data: Json) -> Page[TriggerEvaluation]:
        found = data["trigger"]
        if found is None:
            raise BackfillerUserError(
                "PyTriggerEvaluations",
                [UserErrorDetail("TRIGGER_NOT_FOUND", ("name",), f"no trigger named {name!r}")],
            )
        connection = found["evaluations"]
        info = connection["pageInfo"]
        return Page(
            [_parse.trigger_evaluation(e["node"]) for e in connection["edges"]],
            info["endCursor"] if info["hasNextPage"] else None,
        )

    return Call("PyTriggerEvaluations", {"name": name, "first": first, "after": after}, read)
