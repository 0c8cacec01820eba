"""The daemon's notifier: backfill events in, signed webhook deliveries out.

:meth:`Notifier.tick` runs on the daemon's loop and stays short: it turns new
``backfill_events`` rows into notifications (once each, see ``storage.notifications``), claims
the due ones and hands each to a background asyncio task. HTTP happens in those tasks only, so
a slow or dead receiver never holds the loop, however long it takes. Each attempt and the
receiver's answer are recorded; failures (an error status, a timeout, a refused connection)
are tried again with an exponential back-off until :class:`RetrySchedule` gives up.

Deliveries are bounded (:mod:`.delivery`): one deadline per attempt, a few KiB of each answer.
At most ``concurrency`` are in flight, and at most ``per_destination`` of them to one
``scheme://host:port``, so a slow or hostile receiver holds its share of the slots and no
more. Due deliveries wait in the database: each look reads at most ``BACKLOG`` of them, skips
the busy destinations in the query itself, and counts what it leaves waiting
(``backfiller_notify_deferred_total``). Every delivery goes through :mod:`.egress`: no
address inside (loopback, private, metadata...) unless the admin's allow-list says so.

Delivery is at-least-once: a daemon killed between a receiver's 2xx and recording it leaves
the notification leased; when the lease runs out it is sent again with the same
``X-Backfiller-Delivery`` / ``Idempotency-Key``, which the receiver uses to drop it.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

from backfiller import ids
from backfiller.notify import metrics, signing
from backfiller.notify.addresses import EgressPolicy
from backfiller.notify.delivery import FAILED, Outcome, post_once
from backfiller.notify.events import (
    PayloadFormat,
    RetrySchedule,
    Target,
    WebhookEvent,
    destination_of,
    idempotency_key,
    webhook_event_of,
)
from backfiller.notify.payloads import build_payload
from backfiller.notify.slots import DeliverySlots
from backfiller.observability import logs
from backfiller.storage.notification_records import NotificationRecord
from backfiller.storage.notifications import (
    Attempt,
    EventToNotify,
    NewNotification,
    NotificationRepository,
    WebhookTarget,
)

if TYPE_CHECKING:
    import httpx

    from backfiller.notify.egress import Resolver

logger = logging.getLogger("backfiller.notify")

Clock = Callable[[], datetime]
EVENTS_PER_TICK = 500
RESCAN_SECONDS = 10.0
BACKLOG = 100
"""Due deliveries read at one look (the busy destinations' left out by the query)."""
RECORD_SECONDS = 5.0
"""What recording an attempt may take, past the attempt's own deadline."""


@dataclass(frozen=True)
class NotifierSettings:
    """Args:
    targets: the server's webhooks (every backfill's events go there).
    secret: the HMAC-SHA256 key (``$BACKFILLER_WEBHOOK_SECRET``); unsigned without one.
    timeout_seconds: the deadline of one attempt, all of it (resolve, connect, send, wait,
        read); a receiver slower than this counts as a failed attempt.
    concurrency: deliveries in flight at once.
    per_destination: deliveries in flight at once to one ``scheme://host:port``.
    lease_seconds: a delivery a killed daemon left in flight is sent again this long after
        its claim; longer than an attempt and its recording.
    policy: the admin's allow-list of addresses inside (none by default).
    resolver: how host names are resolved (the system's resolver by default).
    """

    targets: tuple[Target, ...] = ()
    secret: bytes | None = None
    timeout_seconds: float = 10.0
    concurrency: int = 8
    per_destination: int = 2
    lease_seconds: float = 60.0
    schedule: RetrySchedule = field(default_factory=RetrySchedule)
    policy: EgressPolicy = field(default_factory=EgressPolicy)
    resolver: Resolver | None = None


def _backfill_json(event: EventToNotify) -> dict[str, Any]:
    b = event.backfill
    return {
        "id": ids.backfill_id(b.id),
        "job": b.job_name,
        "title": b.title,
        "status": b.status.value.upper(),
        "counts": {
            "total": b.total,
            "pending": b.pending,
            "queued": b.queued,
            "running": b.running,
            "succeeded": b.succeeded,
            "failed": b.failed,
            "canceled": b.canceled,
            "skipped": b.skipped,
        },
    }


def _targets_of(webhooks: Sequence[WebhookTarget], backfill_id: int) -> list[Target]:
    return [
        Target(
            f"backfill-{backfill_id}-{i}",
            w.url,
            frozenset(WebhookEvent(e) for e in w.events),
            PayloadFormat(w.format),
        )
        for i, w in enumerate(webhooks)
    ]


def notifications_of(event: EventToNotify, targets: Sequence[Target]) -> list[NewNotification]:
    """The notifications one stored event makes (none when no target wants it)."""
    kind = webhook_event_of(event.kind, event.message, event.backfill.status)
    if kind is None:
        return []
    found = []
    for target in targets:
        if kind not in target.events:
            continue
        key = idempotency_key(event.event_id, target)
        payload = build_payload(
            target.format, key, kind, event.at, event.message, _backfill_json(event)
        )
        found.append(
            NewNotification(
                event.backfill.id,
                event.event_id,
                target.key,
                kind.value,
                target.url,
                target.format.value,
                payload,
                key,
                destination_of(target.url),
            )
        )
    return found


class CursorMoved(Exception):
    """Another daemon made the notifications of these events first: this tick's are dropped."""


class Notifier:
    def __init__(self, database: Any, clock: Clock, settings: NotifierSettings) -> None:
        self.database = database
        self.clock = clock
        self.settings = settings
        self._in_flight: set[asyncio.Task[None]] = set()
        self._slots = DeliverySlots(settings.concurrency, max(1, settings.per_destination))
        self._client: httpx.AsyncClient | None = None
        self._cursor: int | None = None
        self._look_at = 0.0  # monotonic time of the next look for due notifications

    async def tick(self) -> bool:
        """Create notifications of new events; start the due deliveries. Never waits on HTTP.

        The table of notifications is only read when this daemon made some, scheduled a retry
        that is due, ended a delivery while others waited, or every ``RESCAN_SECONDS`` (for
        what another daemon left behind)."""
        try:
            created = await self.fan_out()
        except CursorMoved:  # several daemons: the expected race, settled by the stored cursor
            logger.debug(
                "another daemon made these notifications first; reading on from its cursor"
            )
            created = 0
        if self._slots.room <= 0 or (not created and time.monotonic() < self._look_at):
            return bool(created)
        self._look_at = time.monotonic() + RESCAN_SECONDS
        due = await self._claim_due()
        for notification, destination in due:
            self._slots.take(destination)
            metrics.IN_FLIGHT.inc()
            task = asyncio.create_task(self._deliver(notification, destination))
            self._in_flight.add(task)
            task.add_done_callback(self._in_flight.discard)
        return bool(created or due)

    async def _claim_due(self) -> list[tuple[NotificationRecord, str]]:
        """Lease the due deliveries that have a slot now; count those left waiting."""
        now = self.clock()
        async with self.database.read() as session:
            rows = await NotificationRepository(session).due(now, BACKLOG, self._slots.busy())
        picked = self._slots.pick([(pk, dest or destination_of(url)) for pk, dest, url in rows])
        if picked.destination_busy:
            metrics.DEFERRED.labels("destination_busy").inc(picked.destination_busy)
        if picked.no_slot:
            metrics.DEFERRED.labels("no_slot").inc(picked.no_slot)
        if not picked.ids:
            return []
        async with self.database.write() as session:
            claimed = await NotificationRepository(session).claim(
                picked.ids, now, now + timedelta(seconds=self.settings.lease_seconds)
            )
        return [(n, picked.destinations[n.id]) for n in claimed]

    async def fan_out(self) -> int:
        """Notifications of the events past the cursor (kept in memory between ticks: the
        conditional move of the stored one tells when another daemon moved it)."""
        async with self.database.read() as session:
            repo = NotificationRepository(session)
            if self._cursor is None:
                self._cursor = await repo.cursor()
            cursor = self._cursor
            events = await repo.events_after(cursor, EVENTS_PER_TICK)
            if not events:
                return 0
            webhooks = await repo.webhooks_of([e.backfill.id for e in events])
        rows: list[NewNotification] = []
        for event in events:
            own = _targets_of(webhooks.get(event.backfill.id, []), event.backfill.id)
            rows += notifications_of(event, [*self.settings.targets, *own])
        async with self.database.write() as session:
            repo = NotificationRepository(session)
            await repo.add(rows, self.clock())
            if not await repo.advance_cursor(cursor, events[-1].event_id):
                self._cursor = None
                raise CursorMoved  # rolls back this transaction's notifications
        self._cursor = events[-1].event_id
        return len(rows)

    def _http(self) -> httpx.AsyncClient:
        if self._client is None:
            from backfiller.notify.egress import egress_client  # httpx: see delivery.post_once

            settings = self.settings
            self._client = egress_client(
                settings.policy, settings.timeout_seconds, settings.concurrency, settings.resolver
            )
        return self._client

    async def _deliver(self, n: NotificationRecord, destination: str) -> None:
        """One attempt and its record, within the attempt's deadline plus the record's: the
        task ends well before its lease lets another daemon send the same delivery."""
        try:
            with logs.bound(backfill_id=ids.backfill_id(n.backfill_id)):
                async with asyncio.timeout(self.settings.timeout_seconds + RECORD_SECONDS):
                    await self._attempt(n, destination)
        except TimeoutError:
            logger.warning("the delivery of %s overran its deadline", n.idempotency_key)
        finally:
            self._slots.release(destination)
            metrics.IN_FLIGHT.dec()
            self._look_at = 0.0  # a slot is free: look again at the next tick

    async def _post(self, n: NotificationRecord, body: bytes, headers: dict[str, str]) -> Outcome:
        try:
            return await post_once(
                self._http(), n.url, body, headers, self.settings.timeout_seconds
            )
        except Exception as exc:
            logger.exception("a delivery of %s failed unexpectedly", n.idempotency_key)
            return Outcome(None, FAILED, None, type(exc).__name__)

    async def _attempt(self, n: NotificationRecord, destination: str) -> None:
        attempt = n.attempts + 1
        body = json.dumps(n.payload, separators=(",", ":")).encode()
        headers = signing.headers(
            self.settings.secret, int(time.time()), body, n.idempotency_key, n.event
        )
        began = time.perf_counter()
        outcome = await self._post(n, body, headers)
        metrics.ATTEMPTS.labels(outcome.category).inc()
        now = self.clock()
        delay = None if outcome.delivered else self.settings.schedule.delay_after(attempt)
        record = Attempt(
            n.id,
            attempt,
            now,
            outcome.status,
            outcome.error,
            int((time.perf_counter() - began) * 1000),
            outcome.text,
            outcome.delivered,
            now + timedelta(seconds=delay) if delay is not None else None,
        )
        if not outcome.delivered:
            # The category is recorded (the API shows it); the detail is for this log only,
            # with the destination but never the URL's path (a Slack webhook's is its secret).
            logger.info(
                "notification %s attempt %d to %s failed: %s (%s)",
                n.idempotency_key,
                attempt,
                destination,
                outcome.error,
                outcome.detail or "no detail",
            )
        if delay is not None:
            self._look_at = min(self._look_at, time.monotonic() + delay)
        try:
            async with self.database.write() as session:
                await NotificationRepository(session).record_attempt(record)
        except Exception:
            logger.exception("could not record a delivery of %s", n.idempotency_key)

    async def close(self) -> None:
        """Let deliveries in flight end (those that do not are sent again after their lease)."""
        if self._in_flight:
            await asyncio.wait(set(self._in_flight), timeout=self.settings.timeout_seconds)
        for task in list(self._in_flight):
            task.cancel()
        if self._client is not None:
            await self._client.aclose()
            self._client = None
