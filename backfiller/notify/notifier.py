"""The daemon's notifier: backfill events in, signed webhook deliveries out.

:meth:`Notifier.tick` runs on the daemon's loop and stays short: it turns new
``backfill_events`` rows into notifications (once each, see ``storage.notifications``), claims
the due ones and hands each to a background asyncio task. HTTP happens in those tasks only, so
a slow or dead receiver never holds the loop, however long it takes. Each attempt and the
receiver's answer are recorded; failures (an error status, a timeout, a refused connection)
are tried again with an exponential back-off until :class:`RetrySchedule` gives up.

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
from backfiller.notify import signing
from backfiller.notify.events import (
    PayloadFormat,
    RetrySchedule,
    Target,
    WebhookEvent,
    idempotency_key,
    webhook_event_of,
)
from backfiller.notify.payloads import build_payload
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

logger = logging.getLogger("backfiller.notify")

Clock = Callable[[], datetime]
EVENTS_PER_TICK = 500
RESCAN_SECONDS = 10.0
MAX_RESPONSE_CHARS = 500


@dataclass(frozen=True)
class NotifierSettings:
    """Args:
    targets: the server's webhooks (every backfill's events go there).
    secret: the HMAC-SHA256 key (``$BACKFILLER_WEBHOOK_SECRET``); unsigned without one.
    timeout_seconds: a receiver slower than this counts as a failed attempt.
    concurrency: deliveries in flight at once.
    """

    targets: tuple[Target, ...] = ()
    secret: bytes | None = None
    timeout_seconds: float = 10.0
    concurrency: int = 8
    lease_seconds: float = 60.0
    schedule: RetrySchedule = field(default_factory=RetrySchedule)


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
        self._client: httpx.AsyncClient | None = None
        self._cursor: int | None = None
        self._look_at = 0.0  # monotonic time of the next look for due notifications

    async def tick(self) -> bool:
        """Create notifications of new events; start the due deliveries. Never waits on HTTP.

        The table of notifications is only read when this daemon made some, scheduled a retry
        that is due, or every ``RESCAN_SECONDS`` (for what another daemon left behind)."""
        try:
            created = await self.fan_out()
        except CursorMoved:  # several daemons: the expected race, settled by the stored cursor
            logger.debug(
                "another daemon made these notifications first; reading on from its cursor"
            )
            created = 0
        room = self.settings.concurrency - len(self._in_flight)
        if room <= 0 or (not created and time.monotonic() < self._look_at):
            return bool(created)
        self._look_at = time.monotonic() + RESCAN_SECONDS
        now = self.clock()
        async with self.database.read() as session:
            ids = await NotificationRepository(session).due(now, room)
        due: list[NotificationRecord] = []
        if ids:
            async with self.database.write() as session:
                due = await NotificationRepository(session).claim(
                    ids, now, now + timedelta(seconds=self.settings.lease_seconds)
                )
        for notification in due:
            task = asyncio.create_task(self._deliver(notification))
            self._in_flight.add(task)
            task.add_done_callback(self._in_flight.discard)
        return bool(created or due)

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
            import httpx  # on the first delivery: an idle daemon does without it

            self._client = httpx.AsyncClient(
                timeout=self.settings.timeout_seconds, follow_redirects=False
            )
        return self._client

    async def _deliver(self, n: NotificationRecord) -> None:
        with logs.bound(backfill_id=ids.backfill_id(n.backfill_id)):
            await self._attempt(n)

    async def _attempt(self, n: NotificationRecord) -> None:
        import httpx  # loaded by _http already; here for its exceptions

        attempt = n.attempts + 1
        body = json.dumps(n.payload, separators=(",", ":")).encode()
        headers = signing.headers(
            self.settings.secret, int(time.time()), body, n.idempotency_key, n.event
        )
        began = time.perf_counter()
        status: int | None = None
        error: str | None = None
        text: str | None = None
        try:
            response = await self._http().post(n.url, content=body, headers=headers)
            status, text = response.status_code, response.text[:MAX_RESPONSE_CHARS]
            if not 200 <= status < 300:
                error = f"HTTP {status}"
        except httpx.TimeoutException:
            error = f"timed out after {self.settings.timeout_seconds:g} s"
        except httpx.HTTPError as exc:
            error = f"{type(exc).__name__}: {exc}"[:MAX_RESPONSE_CHARS]
        delivered = error is None
        now = self.clock()
        delay = None if delivered else self.settings.schedule.delay_after(attempt)
        outcome = Attempt(
            n.id,
            attempt,
            now,
            status,
            error,
            int((time.perf_counter() - began) * 1000),
            text,
            delivered,
            now + timedelta(seconds=delay) if delay is not None else None,
        )
        if not delivered:
            logger.info("notification %s attempt %d failed: %s", n.idempotency_key, attempt, error)
        if delay is not None:
            self._look_at = min(self._look_at, time.monotonic() + delay)
        try:
            async with self.database.write() as session:
                await NotificationRepository(session).record_attempt(outcome)
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
