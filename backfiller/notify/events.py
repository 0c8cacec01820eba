"""Which webhook event a stored backfill event is, and which targets want it. Pure."""

from __future__ import annotations

import enum
import hashlib
from collections.abc import Iterable
from dataclasses import dataclass
from urllib.parse import urlsplit

from backfiller.domain import BackfillState, EventKind
from backfiller.notify.addresses import EgressPolicy

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


_policies: dict[str, EgressPolicy] = {}


def env_policy() -> EgressPolicy:
    """The allow-list of ``$BACKFILLER_WEBHOOK_ALLOW`` (read again when it changes); an entry
    that is neither a network nor a host name allows nothing (the daemon refuses to start
    with one)."""
    import os

    from backfiller.notify.addresses import ALLOW_VARIABLE

    given = os.environ.get(ALLOW_VARIABLE, "")
    found = _policies.get(given)
    if found is None:
        entries = given.replace(",", " ").split()
        valid = [e for e in entries if _valid_entry(e)]
        found = _policies[given] = EgressPolicy.of(valid)
    return found


def _valid_entry(entry: str) -> bool:
    try:
        EgressPolicy.of([entry])
    except ValueError:
        return False
    return True


def host_of(url: str) -> str | None:
    """The host a delivery to ``url`` connects to, as the HTTP client reads it."""
    import httpx

    try:
        return httpx.URL(url).host or None
    except (httpx.InvalidURL, ValueError, TypeError):
        return None


def check_url(url: str, policy: EgressPolicy | None = None) -> str | None:
    """Why ``url`` cannot be a webhook (None when it can): not http(s), too long, not a URL,
    or its host is written as an address (or a name) that webhooks may not reach. A name is
    resolved, and its addresses checked, at each delivery."""
    if not url.startswith(("http://", "https://")):
        return "must be an http:// or https:// URL"
    if len(url) > 2000:
        return "must be at most 2000 characters"
    host = host_of(url)
    if host is None:
        return "must be a valid URL with a host"
    kind = (policy or env_policy()).refusal_of_literal(host)
    if kind is not None:
        return (
            f"points at an address webhooks may not reach ({kind}); an admin can allow it "
            "(--webhook-allow, $BACKFILLER_WEBHOOK_ALLOW)"
        )
    return None


def destination_of(url: str) -> str:
    """``scheme://host:port`` of ``url``: deliveries in flight are limited per destination."""
    parts = urlsplit(url)
    scheme = parts.scheme.lower()
    host = (parts.hostname or "").removesuffix(".")
    try:
        port = parts.port
    except ValueError:
        port = None
    if port is None:
        port = 443 if scheme == "https" else 80
    if ":" in host:
        host = f"[{host}]"
    return f"{scheme}://{host}:{port}"[:300]


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
