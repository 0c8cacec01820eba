"""An attempt whose outcome was never recorded still counts (the flake of
``test_webhooks.py``'s retry test, where a loaded machine recorded 2 attempts of a delivery the
receiver had answered three times).

A daemon claims a delivery and is killed before it records the attempt (here: the claim is
made through the daemon's own repository and then nothing, which is what a SIGKILL right
after the claim's commit leaves). Its lease runs out; the next daemon sends the delivery again.
The receiver may have had the first send, so the count of attempts says two, and the recorded
attempt is the second.
"""

from __future__ import annotations

from datetime import timedelta

from backfiller.notify.addresses import EgressPolicy
from backfiller.notify.events import PayloadFormat, server_target
from backfiller.notify.notifier import Notifier, NotifierSettings
from backfiller.storage import Database
from backfiller.storage.notifications import NotificationRepository
from tests.operations.receiver import Receiver
from tests.operations.test_notify_input import LAUNCH, launch_input
from tests.support import FrozenClock, GraphQLRunner

DELIVERIES = """query($id: ID!) { backfill(id: $id) { notifications(first: 5) { nodes {
  status attempts idempotencyKey deliveries { attempt statusCode } } } } }"""
LEASE_SECONDS = 60.0


async def test_a_delivery_whose_daemon_died_before_recording_it_counts_that_attempt(
    gql: GraphQLRunner, database: Database, clock: FrozenClock, receiver: Receiver
) -> None:
    target = server_target(f"{receiver.url}/hook", [], PayloadFormat.GENERIC)
    settings = NotifierSettings(
        targets=(target,),
        timeout_seconds=5,
        lease_seconds=LEASE_SECONDS,
        policy=EgressPolicy.of(["127.0.0.1"]),
    )
    launched = await gql(LAUNCH, {"input": launch_input([])})
    backfill = launched["launchBackfill"]["backfill"]["id"]
    killed = Notifier(database, clock, NotifierSettings(targets=(target,), concurrency=0))
    assert await killed.fan_out() == 1  # the "launched" notification, due now

    # The killed daemon's claim, committed; it sent (or not) and recorded nothing.
    async with database.read() as session:
        ((pk, _, _),) = await NotificationRepository(session).due(clock(), 10)
    async with database.write() as session:
        lease_until = clock() + timedelta(seconds=LEASE_SECONDS)
        assert await NotificationRepository(session).claim([pk], clock(), lease_until)

    early = Notifier(database, clock, settings)
    assert not await early.tick()  # leased: a daemon looking now does not send it again
    await early.close()
    clock.advance(seconds=LEASE_SECONDS + 1)
    successor = Notifier(database, clock, settings)  # a daemon looking once the lease ran out
    assert await successor.tick()
    await successor.close()  # the delivery in flight ends

    data = await gql(DELIVERIES, {"id": backfill})
    (notification,) = data["backfill"]["notifications"]["nodes"]
    assert notification["status"] == "DELIVERED"
    assert notification["attempts"] == 2
    assert notification["deliveries"] == [{"attempt": 2, "statusCode": 200}]
    sent = [r for r in receiver.snapshot() if r.delivery == notification["idempotencyKey"]]
    assert len(sent) == 1 and sent[0].answered == 200
