"""Which webhook event a stored backfill event is, and which targets want it. Pure."""

from __future__ import annotations

import enum
import hashlib
from collections.abc import Iterable
from dataclasses import dataclass

from backfiller.domain import BackfillState, EventKind

# The message ``record_results`` writes on a run that used up its retries ends with this.
NO_RETRY_LEFT = "no retry left"


class WebhookEvent(enum.StrEnum):
    LAUNCHED = "launched"
    PAUSED = "paused"
    CANCELED = "canceled"
    COMPLETED_SUCCESS = "completed_success"
    COMPLETED_FAILED = "completed_failed"
    FAILED = "failed"
    RUN_FAILED = "run_failed"


ALL_EVENTS: frozenset[WebhookEvent] = frozenset(WebhookEvent)


class PayloadFormat(enum.StrEnum):
    GENERIC = "generic"
    SLACK = "slack"


@dataclass(frozen=True, slots=True)
class Target:
    """Where to send which events. ``key`` names the target in idempotency keys."""

    key: str
    url: str
    events: frozenset[WebhookEvent] = ALL_EVENTS
    format: PayloadFormat = PayloadFormat.GENERIC


def server_target(url: str, events: Iterable[WebhookEvent], fmt: PayloadFormat) -> Target:
    """A target of the daemon's configuration, keyed by its URL (the same on every daemon)."""
    key = "server-" + hashlib.sha256(url.encode()).hexdigest()[:16]
    return Target(key, url, frozenset(events) or ALL_EVENTS, fmt)


def check_url(url: str) -> str | None:
    """Why ``url`` cannot be a webhook (None when it can)."""
    if not url.startswith(("http://", "https://")):
        return "must be an http:// or https:// URL"
    if len(url) > 2000:
        return "must be at most 2000 characters"
    return None


def webhook_event_of(
    kind: str, message: str | None, backfill_status: BackfillState
) -> WebhookEvent | None:
    """The webhook event of a stored backfill event, or None when receivers are not told."""
    match kind:
        case EventKind.LAUNCHED:
            return WebhookEvent.LAUNCHED
        case EventKind.PAUSED:
            return WebhookEvent.PAUSED
        case EventKind.CANCELED:
            return WebhookEvent.CANCELED
        case EventKind.FAILED:
            return WebhookEvent.FAILED
        case EventKind.COMPLETED:
            if backfill_status is BackfillState.COMPLETED_SUCCESS:
                return WebhookEvent.COMPLETED_SUCCESS
            return WebhookEvent.COMPLETED_FAILED
        case EventKind.RUN_FAILED:
            if (message or "").endswith(NO_RETRY_LEFT):
                return WebhookEvent.RUN_FAILED
            return None
    return None


def idempotency_key(event_id: int, target: Target) -> str:
    """The same for every attempt and every daemon: a receiver drops what it has seen."""
    return f"evt-{event_id}-{target.key}"


@dataclass(frozen=True, slots=True)
class RetrySchedule:
    """When to try again after a failed attempt: exponential, capped; None: give up."""

    base_seconds: float = 2.0
    max_seconds: float = 300.0
    max_attempts: int = 8

    def delay_after(self, attempts: int) -> float | None:
        if attempts >= self.max_attempts:
            return None
        return float(min(self.max_seconds, self.base_seconds * 2 ** (attempts - 1)))
