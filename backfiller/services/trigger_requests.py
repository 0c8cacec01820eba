"""The stored form of what a trigger evaluation asked for: private, versioned JSON.

``TriggerEvaluationRecord.requests`` holds one entry per request the trigger returned: the
request (private field names and stored enum values), its preview on a dry run, the problems
that refused it, and the backfill it launched. Nothing public is stored: renaming a public
enum or field changes the resolvers' translation, never the rows. Each entry carries
``version``; a new shape gets a new version and an Alembic migration that rewrites the rows
(``0006`` converted the first, public-shaped rows).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from backfiller import domain
from backfiller.planning import Selection
from backfiller.services.launch_types import (
    AssetPreviewLine,
    AssetRequest,
    LaunchPreview,
    LaunchProblem,
    LaunchRequest,
    ProblemCode,
)

VERSION = 1


@dataclass(frozen=True, slots=True)
class EvaluatedRequest:
    """One request of an evaluation, and what became of it."""

    request: LaunchRequest
    preview: LaunchPreview | None = None
    problems: tuple[LaunchProblem, ...] = ()
    backfill_id: int | None = None


def _selection_json(selection: Selection) -> dict[str, Any]:
    return {
        "kind": selection.kind.value,
        "start": selection.range_start,
        "end": selection.range_end,
        "keys": list(selection.keys) if selection.keys is not None else None,
    }


def _request_json(request: LaunchRequest) -> dict[str, Any]:
    out: dict[str, Any] = {
        "job": request.job,
        "selection": _selection_json(request.selection),
        "reprocess": request.reprocess.value,
        "order": request.order.value,
        "max_concurrent_runs": request.max_concurrent_runs,
        "run_config": request.run_config,
        "tags": [[k, v] for k, v in request.tags],
        "title": request.title,
        "description": request.description,
        "idempotency_key": request.idempotency_key,
    }
    if request.priority is not None:  # absent unless asked: rows written before read the same
        out["priority"] = request.priority
    if request.assets is not None:  # absent for a job: rows written before read the same
        chosen = request.assets
        out["assets"] = {
            "names": list(chosen.names),
            "upstream": chosen.upstream,
            "downstream": chosen.downstream,
        }
    return out


def _preview_json(preview: LaunchPreview) -> dict[str, Any]:
    out: dict[str, Any] = {
        "job": preview.job,
        "total": preview.total,
        "runs": preview.runs,
        "skipped": preview.skipped,
        "first_partitions": list(preview.first_partitions),
        "skipped_partitions": [[k, r.value] for k, r in preview.skipped_partitions],
    }
    if preview.assets is not None:
        out["assets"] = [
            [a.name, a.level, a.total, a.runs, a.skipped, a.ranged_runs] for a in preview.assets
        ]
    if preview.ranged_runs is not None:
        out["ranged_runs"] = preview.ranged_runs
    return out


def _problem_json(problem: LaunchProblem) -> dict[str, Any]:
    field = list(problem.field) if problem.field is not None else None
    return {"code": problem.code.value, "message": problem.message, "field": field}


def to_json(entry: EvaluatedRequest) -> dict[str, Any]:
    """The stored form of ``entry`` (the newest version)."""
    return {
        "version": VERSION,
        "request": _request_json(entry.request),
        "preview": _preview_json(entry.preview) if entry.preview is not None else None,
        "problems": [_problem_json(p) for p in entry.problems],
        "backfill_id": entry.backfill_id,
    }


def _request_of(stored: dict[str, Any]) -> LaunchRequest:
    s = stored["selection"]
    keys = tuple(s["keys"]) if s["keys"] is not None else None
    assets = stored.get("assets")
    return LaunchRequest(
        job=stored["job"],
        selection=Selection(domain.SelectionKind(s["kind"]), s["start"], s["end"], keys),
        reprocess=domain.Reprocess(stored["reprocess"]),
        order=domain.Order(stored["order"]),
        max_concurrent_runs=stored["max_concurrent_runs"],
        run_config=stored["run_config"],
        tags=tuple((k, v) for k, v in stored["tags"]),
        title=stored["title"],
        description=stored["description"],
        idempotency_key=stored["idempotency_key"],
        priority=stored.get("priority"),
        assets=(
            AssetRequest(tuple(assets["names"]), assets["upstream"], assets["downstream"])
            if assets is not None
            else None
        ),
    )


def _preview_of(stored: dict[str, Any]) -> LaunchPreview:
    return LaunchPreview(
        job=stored["job"],
        total=stored["total"],
        runs=stored["runs"],
        skipped=stored["skipped"],
        first_partitions=tuple(stored["first_partitions"]),
        skipped_partitions=tuple(
            (k, domain.SkipReason(r)) for k, r in stored["skipped_partitions"]
        ),
        assets=(
            tuple(AssetPreviewLine(*line) for line in stored["assets"])
            if "assets" in stored
            else None
        ),
        ranged_runs=stored.get("ranged_runs"),
    )


def _problem_of(stored: dict[str, Any]) -> LaunchProblem:
    field = tuple(stored["field"]) if stored["field"] is not None else None
    return LaunchProblem(ProblemCode(stored["code"]), stored["message"], field)


def from_json(stored: dict[str, Any]) -> EvaluatedRequest:
    """Read a stored entry.

    Raises:
        ValueError: the entry is of a version this code does not know (a migration is
            missing).
    """
    version = stored.get("version")
    if version != VERSION:
        raise ValueError(f"a trigger request stored as version {version!r}; expected {VERSION}")
    preview = stored["preview"]
    return EvaluatedRequest(
        request=_request_of(stored["request"]),
        preview=_preview_of(preview) if preview is not None else None,
        problems=tuple(_problem_of(p) for p in stored["problems"]),
        backfill_id=stored["backfill_id"],
    )


__all__ = ["VERSION", "EvaluatedRequest", "from_json", "to_json"]
