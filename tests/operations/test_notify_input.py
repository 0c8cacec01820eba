"""The launch's ``notify`` input: stored with the backfill, or refused with typed errors."""

from __future__ import annotations

from backfiller.ids import parse_backfill_id
from backfiller.storage import Database
from backfiller.storage.notification_records import BackfillWebhookRecord
from backfiller.storage.notifications import NotificationRepository
from backfiller.storage.records import BackfillRecord
from tests.support import GraphQLRunner, count_rows

LAUNCH = """
mutation($input: LaunchBackfillInput!) {
  launchBackfill(input: $input) {
    backfill { id notifications { nodes { id } } }
    userErrors { field message code }
  }
}
"""


def launch_input(notify: list[dict[str, object]], key: str | None = None) -> dict[str, object]:
    found: dict[str, object] = {
        "target": {"job": "daily_sales"},
        "partitions": {"range": {"start": "2024-01-01", "end": "2024-01-03"}},
        "notify": notify,
    }
    if key:
        found["idempotencyKey"] = key
    return found


async def test_bad_webhooks_are_refused_and_nothing_is_written(
    gql: GraphQLRunner, database: Database
) -> None:
    data = await gql(
        LAUNCH,
        {
            "input": launch_input(
                [
                    {"url": "ftp://example.com/hook"},
                    {"url": "http://hooks.example.com/x", "events": []},
                ]
            )
        },
    )
    payload = data["launchBackfill"]
    assert payload["backfill"] is None
    assert [(e["field"], e["code"]) for e in payload["userErrors"]] == [
        (["notify", "0", "url"], "INVALID_ARGUMENT"),
        (["notify", "1", "events"], "INVALID_ARGUMENT"),
    ]
    assert await count_rows(database, BackfillRecord) == 0
    assert await count_rows(database, BackfillWebhookRecord) == 0


async def test_webhooks_are_stored_with_the_backfill_and_covered_by_its_idempotency_key(
    gql: GraphQLRunner, database: Database
) -> None:
    hooks: list[dict[str, object]] = [
        {"url": "https://hooks.example.com/T0/B0/secret", "format": "SLACK"}
    ]
    first = await gql(LAUNCH, {"input": launch_input(hooks, key="k1")})
    assert first["launchBackfill"]["userErrors"] == []
    assert first["launchBackfill"]["backfill"]["notifications"]["nodes"] == []
    again = await gql(LAUNCH, {"input": launch_input(hooks, key="k1")})
    assert again["launchBackfill"]["backfill"]["id"] == first["launchBackfill"]["backfill"]["id"]
    other = await gql(LAUNCH, {"input": launch_input([], key="k1")})
    assert [e["code"] for e in other["launchBackfill"]["userErrors"]] == ["IDEMPOTENCY_KEY_REUSED"]
    assert await count_rows(database, BackfillWebhookRecord) == 1


CANCEL = "mutation($id: ID!) { cancelBackfill(input: {id: $id}) { userErrors { code } } }"
RETRY = """
mutation($id: ID!) {
  retryBackfill(input: {id: $id, include: [FAILED, CANCELED, NOT_RUN]}) {
    backfill { id } userErrors { code message }
  }
}
"""


async def test_a_retry_is_stored_with_its_parents_webhooks(
    gql: GraphQLRunner, database: Database
) -> None:
    hooks: list[dict[str, object]] = [
        {"url": "https://hooks.example.com/generic", "events": ["COMPLETED_FAILED", "CANCELED"]},
        {"url": "https://hooks.example.com/T0/B0/x", "format": "SLACK"},
    ]
    launched = await gql(LAUNCH, {"input": launch_input(hooks)})
    parent = launched["launchBackfill"]["backfill"]["id"]
    canceled = await gql(CANCEL, {"id": parent})
    assert canceled["cancelBackfill"]["userErrors"] == []
    retried = (await gql(RETRY, {"id": parent}))["retryBackfill"]
    assert retried["userErrors"] == []
    pks = [parse_backfill_id(parent), parse_backfill_id(retried["backfill"]["id"])]
    assert None not in pks
    async with database.read() as session:
        stored = await NotificationRepository(session).webhooks_of([pk for pk in pks if pk])
    parent_hooks, child_hooks = (stored[pk] for pk in pks if pk)
    assert len(parent_hooks) == 2
    assert child_hooks == parent_hooks
