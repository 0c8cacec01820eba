"""The Authorize extension through ``schema.execute``: every mutation's refusal is its own
payload, queries get a typed error, rate limits and the audit log."""

from __future__ import annotations

from typing import Any

import pytest

from backfiller.domain.roles import Role
from backfiller.resolvers.access import Principal
from backfiller.storage import Database
from backfiller.storage.auth_records import AuditRecord
from backfiller.storage.records import BackfillRecord
from tests.security.conftest import audit_entries
from tests.security.operations import all_root_fields, operation_for
from tests.support import LAUNCH, LAUNCH_WITH_CREATOR, GraphQLRunner, count_rows

VIEWER = Principal(name="watcher", role=Role.VIEWER, token_id=1)
OPERATOR = Principal(name="ops", role=Role.OPERATOR, token_id=2)

DAILY = {"target": {"job": "daily_sales"}, "partitions": {"keys": ["2024-01-01"]}}


@pytest.mark.parametrize(("root", "field"), all_root_fields("Mutation"))
async def test_every_mutation_refused_without_a_principal_answers_with_its_payload(
    gql: GraphQLRunner, database: Database, root: str, field: str
) -> None:
    gql.principal = None
    op = operation_for(root, field)
    before = await count_rows(database, BackfillRecord)
    result = await gql.raw(op.document, op.variables)
    assert result.errors is None, result.errors
    payload = result.data[field]
    assert [e["code"] for e in payload["userErrors"]] == ["UNAUTHENTICATED"]
    assert await count_rows(database, BackfillRecord) == before


@pytest.mark.parametrize(("root", "field"), all_root_fields("Query"))
async def test_every_query_refused_without_a_principal_is_a_typed_error(
    gql: GraphQLRunner, root: str, field: str
) -> None:
    gql.principal = None
    op = operation_for(root, field)
    result = await gql.raw(op.document, op.variables)
    assert result.errors is not None
    assert [e.extensions["code"] for e in result.errors] == ["UNAUTHENTICATED"]
    assert result.errors[0].path == [field]


async def test_a_viewer_cannot_launch_and_the_refusal_is_audited(
    gql: GraphQLRunner, database: Database, database_url: str
) -> None:
    gql.principal, gql.actor = VIEWER, "watcher"
    data = await gql(LAUNCH, {"input": DAILY})
    assert data["launchBackfill"]["backfill"] is None
    [error] = data["launchBackfill"]["userErrors"]
    assert error["code"] == "FORBIDDEN" and "operator" in error["message"]
    assert await count_rows(database, BackfillRecord) == 0
    [entry] = await audit_entries(database_url)
    assert (entry.actor, entry.role, entry.operation, entry.outcome.value, entry.codes) == (
        "watcher",
        "viewer",
        "launchBackfill",
        "denied",
        ["FORBIDDEN"],
    )
    assert entry.subject == "job daily_sales"


async def test_an_operator_launch_records_its_creator_and_is_audited(
    gql: GraphQLRunner, database_url: str
) -> None:
    gql.principal, gql.actor = OPERATOR, "ops (run run_12)"
    data = await gql(LAUNCH_WITH_CREATOR, {"input": DAILY})
    backfill = data["launchBackfill"]["backfill"]
    assert backfill["creator"] == "ops (run run_12)"
    [entry] = await audit_entries(database_url)
    assert (entry.operation, entry.outcome.value, entry.message) == (
        "launchBackfill",
        "succeeded",
        backfill["id"],
    )
    rejected = await gql(LAUNCH, {"input": {**DAILY, "target": {"job": "nope"}}})
    assert rejected["launchBackfill"]["userErrors"][0]["code"] == "JOB_NOT_FOUND"
    last = (await audit_entries(database_url))[-1]
    assert (last.outcome.value, last.codes) == ("rejected", ["JOB_NOT_FOUND"])


async def test_an_idempotent_replay_is_audited_once_more_and_creates_nothing(
    gql: GraphQLRunner, database: Database, database_url: str
) -> None:
    # The first launch writes its audit entry in the backfill's own transaction; the replay
    # writes nothing of its own, so the extension records it.
    keyed = {**DAILY, "idempotencyKey": "nightly-2024-01-01"}
    first = (await gql(LAUNCH, {"input": keyed}))["launchBackfill"]["backfill"]["id"]
    again = (await gql(LAUNCH, {"input": keyed}))["launchBackfill"]["backfill"]["id"]
    assert again == first
    assert await count_rows(database, BackfillRecord) == 1
    entries = await audit_entries(database_url)
    assert [(e.operation, e.outcome.value, e.message) for e in entries] == [
        ("launchBackfill", "succeeded", first),
        ("launchBackfill", "succeeded", first),
    ]


async def test_launches_are_rate_limited_per_token(gql: GraphQLRunner, database: Database) -> None:
    from dataclasses import replace

    gql.services.settings = replace(gql.settings, launch_rate_limit=3, rate_limit_window_seconds=60)
    gql.principal = OPERATOR
    codes: list[list[str]] = []
    for day in range(1, 6):
        data = await gql(LAUNCH, {"input": {**DAILY, "partitions": {"keys": [f"2024-01-0{day}"]}}})
        codes.append([e["code"] for e in data["launchBackfill"]["userErrors"]])
    assert codes == [[], [], [], ["RATE_LIMITED"], ["RATE_LIMITED"]]
    assert await count_rows(database, BackfillRecord) == 3
    # Another token has its own budget.
    gql.principal = Principal(name="other", role=Role.OPERATOR, token_id=3)
    data = await gql(LAUNCH, {"input": {**DAILY, "partitions": {"keys": ["2024-02-01"]}}})
    assert data["launchBackfill"]["userErrors"] == []
    # The window slides.
    gql.principal = OPERATOR
    gql.clock.advance(seconds=61)
    data = await gql(LAUNCH, {"input": {**DAILY, "partitions": {"keys": ["2024-02-02"]}}})
    assert data["launchBackfill"]["userErrors"] == []


async def test_audit_log_is_readable_by_admins_only(gql: GraphQLRunner) -> None:
    gql.principal = OPERATOR
    await gql(LAUNCH, {"input": DAILY})
    query = "{ auditLog(first: 10) { nodes { actor role operation outcome codes at requestId } } }"
    refused = await gql.raw(query)
    assert refused.errors is not None
    assert refused.errors[0].extensions["code"] == "FORBIDDEN"
    gql.principal = Principal(name="root", role=Role.ADMIN, token_id=9)
    nodes: list[dict[str, Any]] = (await gql(query))["auditLog"]["nodes"]
    assert [(n["operation"], n["role"], n["outcome"]) for n in nodes] == [
        ("launchBackfill", "OPERATOR", "SUCCEEDED")
    ]
    assert nodes[0]["requestId"] == "test"


async def test_an_unknown_root_field_is_refused_even_to_admins(
    gql: GraphQLRunner, monkeypatch: pytest.MonkeyPatch
) -> None:
    from backfiller.resolvers import policy as auth

    without_jobs = {
        root: {k: v for k, v in fields.items() if k != "jobs"}
        for root, fields in auth.FIELD_ROLES.items()
    }
    monkeypatch.setattr(auth, "FIELD_ROLES", without_jobs)
    result = await gql.raw("{ jobs { name } }")
    assert result.errors is not None
    assert result.errors[0].extensions["code"] == "FORBIDDEN"


async def test_audit_records_are_not_written_for_queries(
    gql: GraphQLRunner, database: Database
) -> None:
    await gql("{ jobs { name } backfills { nodes { id } } }")
    assert await count_rows(database, AuditRecord) == 0
