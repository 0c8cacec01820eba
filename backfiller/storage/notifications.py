"""Data functions of webhook notifications. Never commits; the caller owns the transaction."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import Connection, case, insert, or_, select, update
from sqlalchemy.ext.asyncio import AsyncSession

from backfiller.storage.notification_records import (
    BackfillWebhookRecord,
    NotificationAttemptRecord,
    NotificationRecord,
    NotifierCursorRecord,
)
from backfiller.storage.records import BackfillEventRecord, BackfillRecord, table_of
from backfiller.storage.rows import changed
from backfiller.storage.upserts import upsert

CURSOR = "events"
PENDING = "pending"
DELIVERED = "delivered"
FAILED = "failed"

_INSERT_WEBHOOK = insert(table_of(BackfillWebhookRecord))


@dataclass(frozen=True, slots=True)
class WebhookTarget:
    """A webhook of a launch: where, which events (names), which payload format."""

    url: str
    events: tuple[str, ...]
    format: str


@dataclass(frozen=True, slots=True)
class EventToNotify:
    event_id: int
    kind: str
    at: datetime
    message: str | None
    backfill: BackfillRecord


@dataclass(frozen=True, slots=True)
class NewNotification:
    backfill_id: int
    event_id: int
    target: str
    event: str
    url: str
    format: str
    payload: dict[str, Any]
    idempotency_key: str
    destination: str | None = None


@dataclass(frozen=True, slots=True)
class Attempt:
    """The outcome of one delivery attempt."""

    notification_id: int
    attempt: int
    at: datetime
    status_code: int | None
    error: str | None
    duration_ms: int
    response_body: str | None
    delivered: bool
    next_attempt_at: datetime | None
    """When to try again; None with ``delivered`` False: give up."""


def add_webhooks(conn: Connection, backfill_id: int, targets: Sequence[WebhookTarget]) -> None:
    """In the launch's transaction (see ``repositories.add_backfill``)."""
    if targets:
        conn.execute(
            _INSERT_WEBHOOK,
            [
                {
                    "backfill_id": backfill_id,
                    "url": t.url,
                    "events": list(t.events),
                    "format": t.format,
                }
                for t in targets
            ],
        )


class NotificationRepository:
    def __init__(self, session: AsyncSession) -> None:
        self.session = session
        self.dialect = session.get_bind().dialect.name

    # -- fan-out ---------------------------------------------------------------------------

    async def cursor(self) -> int:
        found = await self.session.scalar(
            select(NotifierCursorRecord.last_event_id).where(NotifierCursorRecord.name == CURSOR)
        )
        return int(found or 0)

    async def events_after(self, cursor: int, limit: int) -> list[EventToNotify]:
        result = await self.session.execute(
            select(BackfillEventRecord, BackfillRecord)
            .join(BackfillRecord, BackfillRecord.id == BackfillEventRecord.backfill_id)
            .where(BackfillEventRecord.id > cursor)
            .order_by(BackfillEventRecord.id)
            .limit(limit)
        )
        return [EventToNotify(int(e.id), e.kind, e.at, e.message, b) for e, b in result.all()]

    async def webhooks_of(self, backfill_ids: Sequence[int]) -> dict[int, list[WebhookTarget]]:
        found: dict[int, list[WebhookTarget]] = {}
        if not backfill_ids:
            return found
        result = await self.session.execute(
            select(BackfillWebhookRecord)
            .where(BackfillWebhookRecord.backfill_id.in_(list(set(backfill_ids))))
            .order_by(BackfillWebhookRecord.id)
        )
        for w in result.scalars():
            found.setdefault(w.backfill_id, []).append(
                WebhookTarget(w.url, tuple(w.events), w.format)
            )
        return found

    async def add(self, rows: Sequence[NewNotification], now: datetime) -> None:
        """Insert notifications; one already made for an (event, target) is left alone."""
        if not rows:
            return
        table = table_of(NotificationRecord)
        ins = upsert(self.dialect, table)
        await self.session.execute(
            ins.on_conflict_do_nothing(),
            [
                {
                    "backfill_id": r.backfill_id,
                    "event_id": r.event_id,
                    "target": r.target,
                    "event": r.event,
                    "url": r.url,
                    "destination": r.destination,
                    "format": r.format,
                    "payload": r.payload,
                    "idempotency_key": r.idempotency_key,
                    "status": PENDING,
                    "attempts": 0,
                    "next_attempt_at": now,
                    "lease_until": None,
                    "created_at": now,
                    "delivered_at": None,
                    "last_status_code": None,
                    "last_error": None,
                }
                for r in rows
            ],
        )

    async def advance_cursor(self, seen: int, to: int) -> bool:
        """Move the cursor from ``seen`` to ``to``; False when another daemon moved it."""
        moved = await self.session.execute(
            update(NotifierCursorRecord)
            .where(NotifierCursorRecord.name == CURSOR, NotifierCursorRecord.last_event_id == seen)
            .values(last_event_id=to)
            .execution_options(synchronize_session=False)
        )
        if changed(moved):
            return True
        # The migration creates the row; a table emptied since (by hand, by tests) gets it back.
        table = table_of(NotifierCursorRecord)
        ins = upsert(self.dialect, table)
        # RETURNING says whether the row was made (psycopg reports rowcount -1 for this insert).
        made = await self.session.execute(
            ins.values(name=CURSOR, last_event_id=to)
            .on_conflict_do_nothing()
            .returning(table.c.name)
        )
        return made.first() is not None and seen == 0

    # -- delivery --------------------------------------------------------------------------

    async def due(
        self, now: datetime, limit: int, busy: Sequence[str] = ()
    ) -> list[tuple[int, str | None, str]]:
        """Pending notifications due now and not leased, oldest first, but those to the
        ``busy`` destinations: each as (id, destination, url)."""
        if limit <= 0:
            return []
        query = (
            select(NotificationRecord.id, NotificationRecord.destination, NotificationRecord.url)
            .where(
                NotificationRecord.status == PENDING,
                NotificationRecord.next_attempt_at <= now,
                or_(NotificationRecord.lease_until.is_(None), NotificationRecord.lease_until < now),
            )
            .order_by(NotificationRecord.next_attempt_at, NotificationRecord.id)
            .limit(limit)
        )
        if busy:
            query = query.where(
                or_(
                    NotificationRecord.destination.is_(None),
                    NotificationRecord.destination.not_in(list(busy)),
                )
            )
        result = await self.session.execute(query)
        return [(int(i), d, u) for i, d, u in result.all()]

    async def claim(
        self, ids: Sequence[int], now: datetime, lease_until: datetime
    ) -> list[NotificationRecord]:
        """Lease ``ids`` to the caller until ``lease_until``, those still due and unleased (a
        daemon killed mid-delivery leaves its lease to run out, and the next one sends again).

        A lease that ran out is an attempt whose outcome was never recorded (its daemon was
        killed, or could not write it in time): the receiver may have had it, so it counts
        among ``attempts``, and the next attempt is numbered after it."""
        claimed: list[int] = []
        lost = case((NotificationRecord.lease_until.is_not(None), 1), else_=0)
        for pk in ids:
            moved = await self.session.execute(
                update(NotificationRecord)
                .where(
                    NotificationRecord.id == pk,
                    NotificationRecord.status == PENDING,
                    or_(
                        NotificationRecord.lease_until.is_(None),
                        NotificationRecord.lease_until < now,
                    ),
                )
                .values(lease_until=lease_until, attempts=NotificationRecord.attempts + lost)
                .execution_options(synchronize_session=False)
            )
            if changed(moved):
                claimed.append(pk)
        if not claimed:
            return []
        result = await self.session.execute(
            select(NotificationRecord).where(NotificationRecord.id.in_(claimed))
        )
        return list(result.scalars().all())

    async def record_attempt(self, a: Attempt) -> None:
        await self.session.execute(
            insert(NotificationAttemptRecord).values(
                notification_id=a.notification_id,
                attempt=a.attempt,
                at=a.at,
                status_code=a.status_code,
                error=a.error,
                duration_ms=a.duration_ms,
                response_body=a.response_body,
            )
        )
        values: dict[str, Any] = {
            "attempts": a.attempt,
            "lease_until": None,
            "last_status_code": a.status_code,
            "last_error": a.error,
        }
        if a.delivered:
            values.update(status=DELIVERED, delivered_at=a.at)
        elif a.next_attempt_at is None:
            values.update(status=FAILED)
        else:
            values.update(next_attempt_at=a.next_attempt_at)
        await self.session.execute(
            update(NotificationRecord)
            .where(NotificationRecord.id == a.notification_id)
            .values(**values)
            .execution_options(synchronize_session=False)
        )

    # -- reading ---------------------------------------------------------------------------

    async def page_of_backfill(
        self, backfill_id: int, first: int, after_id: int | None
    ) -> list[NotificationRecord]:
        query = select(NotificationRecord).where(NotificationRecord.backfill_id == backfill_id)
        if after_id is not None:
            query = query.where(NotificationRecord.id > after_id)
        result = await self.session.execute(query.order_by(NotificationRecord.id).limit(first))
        return list(result.scalars().all())

    async def attempts_of(self, ids: Sequence[int]) -> dict[int, list[NotificationAttemptRecord]]:
        found: dict[int, list[NotificationAttemptRecord]] = {i: [] for i in ids}
        if not ids:
            return found
        result = await self.session.execute(
            select(NotificationAttemptRecord)
            .where(NotificationAttemptRecord.notification_id.in_(list(ids)))
            .order_by(NotificationAttemptRecord.id)
        )
        for a in result.scalars():
            found[a.notification_id].append(a)
        return found
