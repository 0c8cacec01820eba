"""Notifications: the launch's ``notify`` input to stored webhooks, stored deliveries to
public types."""

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit

from backfiller.ids import encode_cursor
from backfiller.notify.events import PayloadFormat, WebhookEvent, check_url
from backfiller.resolvers.pages import cursor_value, page_info
from backfiller.schema.common import UserError, UserErrorCode
from backfiller.schema.notifications import (
    Notification,
    NotificationConnection,
    NotificationDelivery,
    NotificationEdge,
    NotificationEvent,
    NotificationFormat,
    NotificationStatus,
    NotifyInput,
)
from backfiller.storage.notification_records import NotificationRecord
from backfiller.storage.notifications import (
    DELIVERED,
    FAILED,
    PENDING,
    NotificationRepository,
    WebhookTarget,
)

MAX_WEBHOOKS = 10

_EVENTS = {
    NotificationEvent.LAUNCHED: WebhookEvent.LAUNCHED,
    NotificationEvent.PAUSED: WebhookEvent.PAUSED,
    NotificationEvent.CANCELED: WebhookEvent.CANCELED,
    NotificationEvent.COMPLETED_SUCCESS: WebhookEvent.COMPLETED_SUCCESS,
    NotificationEvent.COMPLETED_FAILED: WebhookEvent.COMPLETED_FAILED,
    NotificationEvent.FAILED: WebhookEvent.FAILED,
    NotificationEvent.RUN_FAILED: WebhookEvent.RUN_FAILED,
}
_PUBLIC_EVENTS = {v.value: k for k, v in _EVENTS.items()}
_FORMATS = {
    NotificationFormat.GENERIC: PayloadFormat.GENERIC,
    NotificationFormat.SLACK: PayloadFormat.SLACK,
}
_PUBLIC_FORMATS = {v.value: k for k, v in _FORMATS.items()}
_STATUSES = {
    PENDING: NotificationStatus.PENDING,
    DELIVERED: NotificationStatus.DELIVERED,
    FAILED: NotificationStatus.FAILED,
}


def notify_errors(notify: list[NotifyInput] | None) -> list[UserError]:
    """What is wrong with a launch's ``notify`` (nothing is written when anything is)."""
    if not notify:
        return []
    if len(notify) > MAX_WEBHOOKS:
        return [
            UserError(
                field=["notify"],
                message=f"at most {MAX_WEBHOOKS} webhooks",
                code=UserErrorCode.INVALID_ARGUMENT,
            )
        ]
    errors = []
    for i, target in enumerate(notify):
        problem = check_url(target.url)
        if problem is None and "\x00" in target.url:
            problem = "must not contain NUL characters"
        if problem is not None:
            errors.append(
                UserError(
                    field=["notify", str(i), "url"],
                    message=problem,
                    code=UserErrorCode.INVALID_ARGUMENT,
                )
            )
        if target.events is not None and not target.events:
            errors.append(
                UserError(
                    field=["notify", str(i), "events"],
                    message="must name at least one event (or be null for all)",
                    code=UserErrorCode.INVALID_ARGUMENT,
                )
            )
    return errors


def webhooks_of(notify: list[NotifyInput] | None) -> tuple[WebhookTarget, ...]:
    """The stored webhooks of a valid ``notify``."""
    found = []
    for target in notify or []:
        events = target.events or list(NotificationEvent)
        fmt = _FORMATS[target.format or NotificationFormat.GENERIC]
        found.append(
            WebhookTarget(target.url, tuple(sorted({_EVENTS[e].value for e in events})), fmt.value)
        )
    return tuple(found)


def fingerprint_of(notify: list[NotifyInput] | None) -> list[Any]:
    """``notify`` in the request's fingerprint (an idempotency key covers it too)."""
    return [[w.url, list(w.events), w.format] for w in webhooks_of(notify)]


def destination_of(url: str) -> str:
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.hostname or ''}"


async def notifications_page(
    database: Any, backfill_pk: int, limit: int, after: str | None
) -> NotificationConnection:
    after_id = cursor_value("ntf", after)
    async with database.read() as session:
        repo = NotificationRepository(session)
        records = await repo.page_of_backfill(backfill_pk, limit + 1, after_id)
        attempts = await repo.attempts_of([r.id for r in records[:limit]])
    edges = [
        NotificationEdge(
            cursor=encode_cursor("ntf", r.id), node=_notification(r, attempts.get(r.id, []))
        )
        for r in records[:limit]
    ]
    return NotificationConnection(
        edges=edges, page_info=page_info(edges, len(records) > limit, after)
    )


def _notification(r: NotificationRecord, attempts: list[Any]) -> Notification:
    return Notification(
        id=f"ntf_{r.id}",  # type: ignore[arg-type]
        event=_PUBLIC_EVENTS[r.event],
        destination=destination_of(r.url),
        format=_PUBLIC_FORMATS[r.format],
        status=_STATUSES[r.status],
        attempts=r.attempts,
        idempotency_key=r.idempotency_key,
        created_at=r.created_at,
        delivered_at=r.delivered_at,
        last_status_code=r.last_status_code,
        last_error=r.last_error,
        deliveries=[
            NotificationDelivery(
                attempt=a.attempt,
                at=a.at,
                status_code=a.status_code,
                error=a.error,
                duration_ms=a.duration_ms,
            )
            for a in attempts
        ],
    )
