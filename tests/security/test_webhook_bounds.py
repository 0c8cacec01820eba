"""Hostile receivers against a real daemon: an answer without end costs it a few KiB, and a
receiver that trickles its answer holds its share of the delivery slots, no more, for no
longer than the deadline of an attempt, while other backfills' webhooks are delivered."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest

from tests.acceptance.daemon_support import Daemon, gql, launch, wait_for, wait_status
from tests.operations.receiver import Receiver
from tests.operations.support import scrape, value
from tests.security.receivers import EndlessAnswer, Trickler
from tests.support import LiveServer, free_port, live_server

pytestmark = pytest.mark.acceptance

DEFS = "tests.defs.jobs_daemon:definitions"
# The receivers listen on loopback: the server and the daemon are told to allow it (through
# the environment, so that these tests run against a daemon without --webhook-allow too).
ALLOW = {"BACKFILLER_WEBHOOK_ALLOW": "127.0.0.1"}
NOTIFICATIONS = """query($id: ID!) { backfill(id: $id) { notifications(first: 20) { nodes {
  status attempts deliveries { statusCode error durationMs } } } } }"""
MiB = 1024 * 1024


server = live_server(DEFS, env=ALLOW)


def rss(pid: int) -> int:
    """Resident memory of a process, in bytes."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    raise AssertionError("no VmRSS")


def notifications(server: LiveServer, backfill: str) -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = gql(server, NOTIFICATIONS, {"id": backfill})["backfill"][
        "notifications"
    ]["nodes"]
    return found


def warm(server: LiveServer, receiver: Receiver) -> None:
    """A backfill with a webhook, run to its end and delivered: the daemon has loaded all it
    loads (workers, the HTTP client) before anything is measured."""
    hook = [{"url": f"{receiver.url}/warm", "events": ["COMPLETED_SUCCESS"]}]
    backfill = launch(server, "steady", "2001-01-01", "2001-01-02", notify=hook)
    wait_status(server, backfill, {"COMPLETED_SUCCESS"})
    wait_for("the warm-up delivered", lambda: receiver.snapshot(), timeout=60)


def test_an_answer_of_256_mib_costs_the_daemon_a_few_kib(
    server: LiveServer, database_url: str
) -> None:
    endless = EndlessAnswer(size=256 * MiB)
    plain = Receiver()
    daemon = Daemon(database_url, workers=1, extra=["--notify-timeout", "20"], env=ALLOW)
    try:
        warm(server, plain)
        time.sleep(1)
        before = rss(daemon.proc.pid)
        hook = [{"url": f"{endless.url}/hook", "events": ["LAUNCHED"]}]
        backfill = launch(server, "steady", "2001-02-01", "2001-02-01", notify=hook)
        peak = before
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            peak = max(peak, rss(daemon.proc.pid))
            found = notifications(server, backfill)
            # The notification's status and its deliveries are two reads (two snapshots on
            # PostgreSQL): wait for the status, which is written with the delivery.
            if found and found[0]["status"] != "PENDING" and found[0]["deliveries"]:
                break
            time.sleep(0.05)
        peak = max(peak, rss(daemon.proc.pid))
    finally:
        daemon.stop()
        plain.close()
        endless.close()
    assert found[0]["deliveries"][0]["statusCode"] == 200
    assert found[0]["status"] == "DELIVERED"
    assert endless.requests == ["/hook"]
    grown = peak - before
    assert grown < 20 * MiB, f"the daemon grew by {grown / MiB:.1f} MiB"
    assert endless.sent_bytes < 256 * MiB  # the rest was never read


def test_a_trickling_receiver_holds_its_share_of_the_slots_and_no_more(
    server: LiveServer, database_url: str
) -> None:
    trickler = Trickler(every=1.0, lasting=60.0)
    plain = Receiver()
    port = free_port()
    daemon = Daemon(
        database_url,
        workers=1,
        extra=["--notify-timeout", "2", "--metrics-port", str(port)],
        env=ALLOW,
    )
    try:
        warm(server, plain)
        # One operator's backfill: 10 webhooks to a receiver that answers a byte a second.
        slow = [{"url": f"{trickler.url}/hook{i}", "events": ["LAUNCHED"]} for i in range(10)]
        first = launch(server, "steady", "2001-03-01", "2001-03-01", notify=slow)
        wait_for("the trickler's first requests", lambda: len(trickler.requests) >= 2)
        time.sleep(1.0)  # long enough for a daemon that would give it every slot to do so
        # Another backfill's webhook is delivered at once, not when the trickler lets go.
        started = time.monotonic()
        hook = [{"url": f"{plain.url}/other", "events": ["LAUNCHED"]}]
        launch(server, "steady", "2001-03-02", "2001-03-02", notify=hook)
        wait_for(
            "the other backfill's webhook",
            lambda: any(r.path == "/other" for r in plain.snapshot()),
            timeout=30,
        )
        took = time.monotonic() - started
        # Each trickled attempt ends at its deadline (2 s), recorded as timed out.
        timed_out = wait_for(
            "the trickled attempts recorded",
            lambda: (
                [d for n in notifications(server, first) for d in n["deliveries"] if d["error"]]
                or None
            ),
            timeout=30,
        )
        metrics = scrape(f"http://127.0.0.1:{port}/metrics")
    finally:
        daemon.stop()
        plain.close()
        trickler.close()
    # Seconds, not the trickler's 60 s (margin for a loaded machine: the deadline is 2 s).
    assert took < 15.0, f"the other webhook waited {took:.1f} s"
    assert trickler.most_open <= 2  # its share: 2 of the 8 slots
    assert {d["error"] for d in timed_out} == {"timed out"}
    assert all(d["durationMs"] < 5000 for d in timed_out)  # the 2 s deadline, not 60 s
    # The deliveries left waiting for the trickler's share are counted.
    assert value(metrics, "backfiller_notify_deferred_total", reason="destination_busy") > 0
    assert value(metrics, "backfiller_notify_attempts_total", outcome="timed_out") > 0
