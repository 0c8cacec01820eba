"""Public types of webhook notifications: what a launch asks for, and what was delivered."""

from __future__ import annotations

import enum
from datetime import datetime

import strawberry

from backfiller.schema.common import PageInfo


@strawberry.enum(description="A backfill lifecycle event a webhook can be told about.")
class NotificationEvent(enum.Enum):
    LAUNCHED = "LAUNCHED"
    PAUSED = "PAUSED"
    CANCELED = "CANCELED"
    COMPLETED_SUCCESS = "COMPLETED_SUCCESS"
    COMPLETED_FAILED = "COMPLETED_FAILED"
    FAILED = strawberry.enum_value(
        "FAILED", description="The backfill FAILED (a service-side fault)."
    )
    RUN_FAILED = strawberry.enum_value(
        "RUN_FAILED", description="A run failed and its partition has no retry left."
    )


@strawberry.enum(description="The body of a webhook delivery.")
class NotificationFormat(enum.Enum):
    GENERIC = strawberry.enum_value(
        "GENERIC", description="JSON: id, event, occurredAt, message and the backfill."
    )
    SLACK = strawberry.enum_value(
        "SLACK", description='Slack\'s incoming-webhook body: {"text": ...}.'
    )


@strawberry.enum(description="Where the delivery of a notification stands.")
class NotificationStatus(enum.Enum):
    PENDING = strawberry.enum_value("PENDING", description="Not delivered yet; will be tried.")
    DELIVERED = strawberry.enum_value("DELIVERED", description="The receiver answered 2xx.")
    FAILED = strawberry.enum_value("FAILED", description="Every attempt failed; given up.")


@strawberry.input(description="A webhook to tell about this backfill's lifecycle events.")
class NotifyInput:
    url: str = strawberry.field(description="An http:// or https:// URL that accepts POST.")
    events: list[NotificationEvent] | None = strawberry.field(
        default=None, description="Which events; all of them when null."
    )
    format: NotificationFormat | None = strawberry.field(
        default=None, description="GENERIC when null."
    )


@strawberry.type(description="One attempt to deliver a notification, and the answer.")
class NotificationDelivery:
    attempt: int
    at: datetime
    status_code: int | None = strawberry.field(description="The HTTP status; null on no answer.")
    error: str | None = strawberry.field(description="Why the attempt failed, if it did.")
    duration_ms: int


@strawberry.type(description="A lifecycle event sent (or to be sent) to one webhook.")
class Notification:
    id: strawberry.ID
    event: NotificationEvent
    destination: str = strawberry.field(
        description="The webhook's scheme and host (its path may hold a secret, as Slack's do)."
    )
    format: NotificationFormat
    status: NotificationStatus
    attempts: int
    idempotency_key: str = strawberry.field(
        description="Sent with every attempt (`Idempotency-Key`, `X-Backfiller-Delivery`): a "
        "receiver that has seen it drops the delivery."
    )
    created_at: datetime
    delivered_at: datetime | None
    last_status_code: int | None
    last_error: str | None
    deliveries: list[NotificationDelivery] = strawberry.field(description="Oldest first.")


@strawberry.type
class NotificationEdge:
    cursor: str
    node: Notification


@strawberry.type
class NotificationConnection:
    edges: list[NotificationEdge]
    page_info: PageInfo

    @strawberry.field
    def nodes(self) -> list[Notification]:
        return [e.node for e in self.edges]
