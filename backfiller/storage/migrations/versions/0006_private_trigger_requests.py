"""Trigger evaluation requests stored in a private, versioned shape

Revision ID: 0006
Revises: 0005

Until 0006 each entry of ``trigger_evaluations.requests`` held the public GraphQL shape: the
``LaunchBackfillInput`` in camelCase with public enum names, a camelCase preview, and user
errors with public codes and field paths. This rewrites every entry as version 1 of the
private shape (``backfiller.services.trigger_requests``): snake_case names, stored enum values,
field paths named after the launch request's fields. The conversion is written out here, not
imported, so that it stays what it was when the code moves on.
"""

from collections.abc import Callable, Sequence
from typing import Any

import sqlalchemy as sa
from alembic import op

revision: str = "0006"
down_revision: str | None = "0005"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

VERSION = 1
BATCH = 500

# The first step of an error's field path, public -> private (others are the same).
_FIELDS = {
    "maxConcurrentRuns": "max_concurrent_runs",
    "runConfig": "run_config",
    "idempotencyKey": "idempotency_key",
}
_PUBLIC_FIELDS = {v: k for k, v in _FIELDS.items()}

_evaluations = sa.table(
    "trigger_evaluations",
    sa.column("id", sa.Integer()),
    sa.column("requests", sa.JSON()),
)


def _private_field(path: list[str] | None) -> list[str] | None:
    if not path:
        return None
    if path[:2] == ["target", "job"]:
        return ["job", *path[2:]]
    return [_FIELDS.get(path[0], path[0]), *path[1:]]


def _public_field(path: list[str] | None) -> list[str] | None:
    if not path:
        return None
    if path[0] == "job":
        return ["target", "job", *path[1:]]
    return [_PUBLIC_FIELDS.get(path[0], path[0]), *path[1:]]


def _private_selection(given: dict[str, Any]) -> dict[str, Any]:
    if given.get("range"):
        r = given["range"]
        return {"kind": "range", "start": r["start"], "end": r["end"], "keys": None}
    if given.get("keys") is not None:
        return {"kind": "keys", "start": None, "end": None, "keys": list(given["keys"])}
    return {"kind": "all", "start": None, "end": None, "keys": None}


def _public_selection(stored: dict[str, Any]) -> dict[str, Any]:
    if stored["kind"] == "range":
        return {"range": {"start": stored["start"], "end": stored["end"]}}
    if stored["kind"] == "keys":
        return {"keys": list(stored["keys"])}
    return {"all": True}


def _upgrade_entry(entry: dict[str, Any]) -> dict[str, Any]:
    if entry.get("version") == VERSION:
        return entry
    given = entry["input"]
    preview = entry.get("preview")
    return {
        "version": VERSION,
        "request": {
            "job": given["target"]["job"],
            "selection": _private_selection(given["partitions"]),
            "reprocess": (given.get("reprocess") or "MISSING").lower(),
            "order": (given.get("order") or "OLDEST_FIRST").lower(),
            "max_concurrent_runs": given.get("maxConcurrentRuns"),
            "run_config": given.get("runConfig"),
            "tags": [[t["key"], t["value"]] for t in given.get("tags") or []],
            "title": given.get("title"),
            "description": given.get("description"),
            "idempotency_key": given.get("idempotencyKey"),
        },
        "preview": None
        if preview is None
        else {
            "job": preview["job"],
            "total": preview["total"],
            "runs": preview["runs"],
            "skipped": preview["skipped"],
            "first_partitions": list(preview["firstPartitions"]),
            "skipped_partitions": [
                [s["key"], s["reason"].lower()] for s in preview["skippedPartitions"]
            ],
        },
        "problems": [
            {
                "code": e["code"].lower(),
                "message": e["message"],
                "field": _private_field(e.get("field")),
            }
            for e in entry.get("errors") or []
        ],
        "backfill_id": entry.get("backfillId"),
    }


def _downgrade_entry(entry: dict[str, Any]) -> dict[str, Any]:
    if entry.get("version") != VERSION:
        return entry
    request = entry["request"]
    given: dict[str, Any] = {
        "target": {"job": request["job"]},
        "partitions": _public_selection(request["selection"]),
        "reprocess": request["reprocess"].upper(),
        "order": request["order"].upper(),
        "tags": [{"key": k, "value": v} for k, v in request["tags"]],
    }
    for private, public in (
        ("max_concurrent_runs", "maxConcurrentRuns"),
        ("run_config", "runConfig"),
        ("title", "title"),
        ("description", "description"),
        ("idempotency_key", "idempotencyKey"),
    ):
        if request[private] is not None:
            given[public] = request[private]
    preview = entry["preview"]
    return {
        "input": given,
        "preview": None
        if preview is None
        else {
            "job": preview["job"],
            "total": preview["total"],
            "runs": preview["runs"],
            "skipped": preview["skipped"],
            "firstPartitions": list(preview["first_partitions"]),
            "skippedPartitions": [
                {"key": k, "reason": r.upper()} for k, r in preview["skipped_partitions"]
            ],
        },
        "errors": [
            {
                "code": p["code"].upper(),
                "field": _public_field(p["field"]),
                "message": p["message"],
            }
            for p in entry["problems"]
        ],
        "backfillId": entry["backfill_id"],
    }


def _rewrite(convert: Callable[[dict[str, Any]], dict[str, Any]]) -> None:
    """Convert every row, a batch at a time (the table keeps every evaluation)."""
    conn = op.get_bind()
    last = 0
    while True:
        rows = conn.execute(
            sa.select(_evaluations.c.id, _evaluations.c.requests)
            .where(_evaluations.c.id > last)
            .order_by(_evaluations.c.id)
            .limit(BATCH)
        ).all()
        if not rows:
            return
        for pk, requests in rows:
            converted = [convert(e) for e in requests or []]
            if converted != (requests or []):
                conn.execute(
                    sa.update(_evaluations)
                    .where(_evaluations.c.id == pk)
                    .values(requests=converted)
                )
        last = rows[-1][0]


def upgrade() -> None:
    _rewrite(_upgrade_entry)


def downgrade() -> None:
    _rewrite(_downgrade_entry)
