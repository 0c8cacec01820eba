"""Putting a notifier on a daemon, from the command line's options."""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

from backfiller.notify.addresses import EgressPolicy
from backfiller.notify.events import (
    PayloadFormat,
    RetrySchedule,
    WebhookEvent,
    check_url,
    server_target,
)
from backfiller.notify.notifier import Notifier, NotifierSettings

SECRET_VARIABLE = "BACKFILLER_WEBHOOK_SECRET"
TICK_SECONDS = 0.5


def parse_events(text: str | None) -> list[WebhookEvent]:
    """``launched,completed_success`` -> events; empty or None: all of them.

    Raises:
        ValueError: an unknown event name (the message lists the known ones).
    """
    if not text:
        return list(WebhookEvent)
    found = []
    for name in (part.strip().lower() for part in text.split(",") if part.strip()):
        try:
            found.append(WebhookEvent(name))
        except ValueError:
            known = ", ".join(e.value for e in WebhookEvent)
            raise ValueError(f"unknown event {name!r}; known: {known}") from None
    return found


DEFAULT_RETRIES = RetrySchedule()


def notifier_settings(
    urls: Sequence[str],
    events: str | None,
    fmt: str,
    timeout_seconds: float,
    allow: Sequence[str] = (),
    retry_seconds: float = DEFAULT_RETRIES.base_seconds,
) -> NotifierSettings:
    """The daemon's notifier settings; the secret comes from ``$BACKFILLER_WEBHOOK_SECRET``
    (an environment variable, so that it never shows in a process list), the allow-list from
    ``allow`` (``--webhook-allow``) and ``$BACKFILLER_WEBHOOK_ALLOW``.

    Raises:
        ValueError: a bad URL, event, format or allow-list entry, or a retry wait that is not
            a positive number of seconds.
    """
    if not 0 < retry_seconds <= DEFAULT_RETRIES.max_seconds:
        most = DEFAULT_RETRIES.max_seconds
        raise ValueError(f"--notify-retry-seconds must be more than 0 and at most {most:g}")
    try:
        policy = EgressPolicy.from_env(allow)
    except ValueError as exc:
        raise ValueError(f"--webhook-allow: {exc}") from None
    for url in urls:
        problem = check_url(url, policy)
        if problem:
            raise ValueError(f"--notify-url {problem}")
    try:
        payload = PayloadFormat(fmt.lower())
    except ValueError:
        raise ValueError("--notify-format must be generic or slack") from None
    wanted = parse_events(events)
    secret = os.environ.get(SECRET_VARIABLE) or None
    return NotifierSettings(
        targets=tuple(server_target(u, wanted, payload) for u in urls),
        secret=secret.encode() if secret else None,
        timeout_seconds=timeout_seconds,
        # A delivery a killed daemon left in flight is sent again this long after its claim
        # (an attempt and its record end within the timeout plus 5 s).
        lease_seconds=2 * timeout_seconds + 5.0,
        policy=policy,
        schedule=RetrySchedule(base_seconds=retry_seconds),
    )


def install_notifier(daemon: Any, settings: NotifierSettings) -> Notifier:
    """Register the notifier's tick on the daemon's loop."""
    notifier = Notifier(daemon.database, daemon.clock, settings)
    daemon.loop.every(TICK_SECONDS, "notify", notifier.tick)
    return notifier
