"""A retry notifies the receivers its parent notified: the parent's ``notify`` is copied."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from backfiller.storage import Database
from backfiller.storage.notifications import NotificationRepository
from tests.acceptance.daemon_support import Daemon, gql, launch, wait_for, wait_status
from tests.operations.receiver import Receiver
from tests.support import GraphQLRunner, LiveServer

LAUNCH = """
mutation($input: LaunchBackfillInput!) {
  launchBackfill(input: $input) { backfill { id } userErrors { code } }
}
"""
CANCEL = "mutation($id: ID!) { cancelBackfill(input: {id: $id}) { userErrors { code } } }"
RETRY = """
mutation($id: ID!) {
  retryBackfill(input: {id: $id, include: [FAILED, CANCELED, NOT_RUN]}) {
    backfill { id } userErrors { code message }
  }
}
"""
HOOKS: list[dict[str, object]] = [
    {"url": "http://127.0.0.1:9/generic", "events": ["COMPLETED_FAILED", "CANCELED"]},
    {"url": "https://hooks.example.com/T0/B0/x", "format": "SLACK"},
]


async def test_a_retry_is_stored_with_its_parents_webhooks(
    gql: GraphQLRunner, database: Database
) -> None:
    launched = await gql(
        LAUNCH,
        {
            "input": {
                "target": {"job": "daily_sales"},
                "partitions": {"range": {"start": "2024-01-01", "end": "2024-01-03"}},
                "notify": HOOKS,
            }
        },
    )
    parent = launched["launchBackfill"]["backfill"]["id"]
    canceled = await gql(CANCEL, {"id": parent})
    assert canceled["cancelBackfill"]["userErrors"] == []
    retried = (await gql(RETRY, {"id": parent}))["retryBackfill"]
    assert retried["userErrors"] == []
    child = retried["backfill"]["id"]
    pks = [int(parent.removeprefix("bf_")), int(child.removeprefix("bf_"))]
    async with database.read() as session:
        hooks = await NotificationRepository(session).webhooks_of(pks)
    assert len(hooks[pks[0]]) == 2
    assert hooks[pks[1]] == hooks[pks[0]]


@pytest.fixture
def server(database_url: str) -> Iterator[LiveServer]:
    live = LiveServer(database_url, "tests.acceptance.jobs_daemon:definitions")
    yield live
    live.stop()


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    found = Receiver()
    yield found
    found.close()


@pytest.mark.acceptance
def test_the_retry_of_a_failed_backfill_notifies_the_parents_receiver(
    server: LiveServer, database_url: str, receiver: Receiver
) -> None:
    daemon = Daemon(database_url, workers=2)
    try:
        notify = [{"url": f"{receiver.url}/own", "events": ["COMPLETED_FAILED"]}]
        parent = launch(server, "broken", "2001-01-01", "2001-01-01", notify=notify)
        wait_status(server, parent, {"COMPLETED_FAILED"})
        retried = gql(server, RETRY, {"id": parent})["retryBackfill"]
        assert retried["userErrors"] == []
        child = retried["backfill"]["id"]
        wait_status(server, child, {"COMPLETED_FAILED"})

        def completions() -> set[str] | None:
            found = {r.json["backfill"]["id"] for r in receiver.snapshot() if r.path == "/own"}
            return found if found == {parent, child} else None

        assert wait_for("both completions delivered", completions, timeout=30)
    finally:
        daemon.stop()
