"""Webhook notifications with a real receiver on loopback and a real daemon."""

from __future__ import annotations

from typing import Any

import pytest

from backfiller.notify import signing
from tests.acceptance.daemon_support import Daemon, gql, launch, wait_for, wait_status
from tests.operations.receiver import Receiver
from tests.support import LiveServer, live_server

pytestmark = pytest.mark.acceptance

DEFS = "tests.defs.jobs_daemon:definitions"
SECRET = "webhook-test-secret"
# The receivers listen on loopback, where webhooks may only go when an admin allows it: the
# server (which checks a launch's `notify`) and the daemon (which delivers) are both told.
ALLOW = {"BACKFILLER_WEBHOOK_ALLOW": "127.0.0.1"}
NOTIFICATIONS = """
query($id: ID!) { backfill(id: $id) { notifications(first: 50) { nodes {
  id event destination format status attempts idempotencyKey lastStatusCode lastError
  deliveries { attempt statusCode error durationMs }
} } } }
"""


server = live_server(DEFS, env=ALLOW)


def notifications(server: LiveServer, backfill: str) -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = gql(server, NOTIFICATIONS, {"id": backfill})["backfill"][
        "notifications"
    ]["nodes"]
    return found


def all_delivered(server: LiveServer, backfill: str, count: int) -> list[dict[str, Any]] | None:
    found = notifications(server, backfill)
    if len(found) == count and all(n["status"] == "DELIVERED" for n in found):
        return found
    return None


def start_daemon(database_url: str, receiver: Receiver, *extra: str) -> Daemon:
    return Daemon(
        database_url,
        workers=2,
        extra=[
            "--notify-url",
            f"{receiver.url}/hooks",
            "--notify-timeout",
            # The deadline of a whole attempt: room for a loaded machine to connect and read.
            "3",
            "--webhook-allow",
            "127.0.0.1",
            *extra,
        ],
        env={"BACKFILLER_WEBHOOK_SECRET": SECRET},
    )


def test_signed_retried_on_500_and_timeouts_and_recorded(
    server: LiveServer, database_url: str, receiver: Receiver
) -> None:
    # Each delivery: a 500, then an answer slower than the 3 s deadline, then 200.
    receiver.script = lambda n: {1: (500, 0.0), 2: (200, 3.6)}.get(n, (200, 0.0))
    # Retried after 0.5 s, then 1 s (the operator's setting; 2 s, then 4 s by default).
    daemon = start_daemon(database_url, receiver, "--notify-retry-seconds", "0.5")
    try:
        backfill = launch(
            server,
            "broken",
            "2001-01-01",
            "2001-01-02",
            notify=[
                {"url": f"{receiver.url}/slack", "events": ["COMPLETED_FAILED"], "format": "SLACK"}
            ],
        )
        wait_status(server, backfill, {"COMPLETED_FAILED"})
        # Server: launched, run_failed x2 (no retry left), completed_failed; the backfill's own
        # webhook: completed_failed, as Slack text.
        found = wait_for("deliveries", lambda: all_delivered(server, backfill, 5), timeout=120)
    finally:
        daemon.stop()
    events = sorted((n["event"], n["format"]) for n in found)
    assert events == [
        ("COMPLETED_FAILED", "GENERIC"),
        ("COMPLETED_FAILED", "SLACK"),
        ("LAUNCHED", "GENERIC"),
        ("RUN_FAILED", "GENERIC"),
        ("RUN_FAILED", "GENERIC"),
    ]
    for n in found:
        assert n["destination"] == "http://127.0.0.1"
        assert n["attempts"] == 3
        assert [d["statusCode"] for d in n["deliveries"]] == [500, None, 200]
        assert "timed out" in n["deliveries"][1]["error"]
    received = receiver.snapshot()
    assert len(received) == 15  # 5 notifications x 3 attempts
    for item in received:
        assert signing.verify(
            SECRET.encode(),
            item.headers[signing.TIMESTAMP_HEADER.lower()],
            item.body,
            item.headers[signing.SIGNATURE_HEADER.lower()],
        )
        assert item.headers["idempotency-key"] == item.delivery
    keys = {n["idempotencyKey"] for n in found}
    assert {r.delivery for r in received} == keys
    slack = [r for r in received if r.path == "/slack"]
    assert set(slack[0].json) == {"text"} and backfill in slack[0].json["text"]
    done = next(r for r in received if r.path == "/hooks" and r.json["event"] == "completed_failed")
    assert done.json["backfill"]["id"] == backfill
    assert done.json["backfill"]["status"] == "COMPLETED_FAILED"
    assert done.json["backfill"]["counts"]["failed"] == 2


def test_a_stuck_receiver_neither_slows_the_backfill_nor_doubles_after_kill_9(
    server: LiveServer, database_url: str, receiver: Receiver
) -> None:
    receiver.hold()  # answers nothing: every delivery times out, again and again
    daemon = start_daemon(database_url, receiver, "--notify-events", "launched,completed_success")
    try:
        backfill = launch(server, "steady", "2001-01-01", "2001-01-30")
        # The backfill finishes while no delivery has been answered.
        wait_status(server, backfill, {"COMPLETED_SUCCESS"})
        assert all(r.answered is None for r in receiver.snapshot())
        wait_for("the completion's first attempt", lambda: len(receiver.snapshot()) >= 2)
        daemon.kill()  # SIGKILL, deliveries in flight
    finally:
        daemon.stop()
    receiver.release()
    again = start_daemon(database_url, receiver)
    try:
        found = wait_for("deliveries", lambda: all_delivered(server, backfill, 2), timeout=90)
    finally:
        again.stop()
    completed = [n for n in found if n["event"] == "COMPLETED_SUCCESS"]
    assert len(completed) == 1  # one notification of the one completion
    received = [r for r in receiver.snapshot() if r.json["event"] == "completed_success"]
    # Every attempt, before and after the kill, carried the same idempotency id.
    assert {r.delivery for r in received} == {completed[0]["idempotencyKey"]}
    assert sum(r.answered == 200 for r in received) >= 1


def test_the_retry_of_a_failed_backfill_notifies_the_parents_receiver(
    server: LiveServer, database_url: str, receiver: Receiver
) -> None:
    retry = """mutation($id: ID!) { retryBackfill(input: {id: $id}) {
      backfill { id } userErrors { code message } } }"""
    daemon = Daemon(database_url, workers=2, env=ALLOW)
    try:
        notify = [{"url": f"{receiver.url}/own", "events": ["COMPLETED_FAILED"]}]
        parent = launch(server, "broken", "2001-01-01", "2001-01-01", notify=notify)
        wait_status(server, parent, {"COMPLETED_FAILED"})
        retried = gql(server, retry, {"id": parent})["retryBackfill"]
        assert retried["userErrors"] == []
        child = retried["backfill"]["id"]
        wait_status(server, child, {"COMPLETED_FAILED"})

        def completions() -> set[str] | None:
            found = {r.json["backfill"]["id"] for r in receiver.snapshot() if r.path == "/own"}
            return found if found == {parent, child} else None

        # The child was launched by the retry with the parent's webhook: its end is delivered.
        assert wait_for("both completions delivered", completions, timeout=30)
    finally:
        daemon.stop()
