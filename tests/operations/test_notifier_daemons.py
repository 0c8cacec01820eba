"""Several daemons' notifiers on one database: each event is notified once, and the daemon that
loses the race to the stored cursor carries on quietly (no failed task, no duplicate)."""

from __future__ import annotations

from backfiller.notify.events import PayloadFormat, server_target
from backfiller.notify.notifier import Notifier, NotifierSettings
from backfiller.storage import Database
from backfiller.storage.notification_records import NotificationRecord
from tests.operations.test_notify_input import LAUNCH, launch_input
from tests.support import FrozenClock, GraphQLRunner, count_rows


async def test_two_notifiers_make_each_notification_once(
    gql: GraphQLRunner, database: Database, clock: FrozenClock
) -> None:
    # concurrency 0: this test is about making notifications, not delivering them.
    target = server_target("http://127.0.0.1:9/hook", [], PayloadFormat.GENERIC)
    settings = NotifierSettings(targets=(target,), concurrency=0)
    first, second = Notifier(database, clock, settings), Notifier(database, clock, settings)
    assert not await first.tick() and not await second.tick()  # both read the cursor: nothing

    for key in ("a", "b"):
        data = await gql(LAUNCH, {"input": launch_input([], key=key)})
        assert data["launchBackfill"]["userErrors"] == []

    assert await first.tick()  # the two "launched" events, for the server's webhook
    made = await count_rows(database, NotificationRecord)
    assert made == 2
    # The second daemon's cursor is stale: its notifications roll back, without an error.
    assert not await second.tick()
    assert not await second.tick()  # reads on from the stored cursor: nothing new
    assert await count_rows(database, NotificationRecord) == made
