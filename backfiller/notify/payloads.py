"""Bodies of webhook deliveries: a generic JSON document, or Slack's ``{"text": ...}``."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from backfiller.notify.events import PayloadFormat, WebhookEvent

_VERBS = {
    WebhookEvent.LAUNCHED: "was launched",
    WebhookEvent.PAUSED: "was paused",
    WebhookEvent.CANCELED: "was canceled",
    WebhookEvent.COMPLETED_SUCCESS: "completed successfully",
    WebhookEvent.COMPLETED_FAILED: "completed with failed partitions",
    WebhookEvent.FAILED: "failed",
    WebhookEvent.RUN_FAILED: "has a run that failed after its retries",
}


def build_payload(
    fmt: PayloadFormat,
    key: str,
    event: WebhookEvent,
    at: datetime,
    message: str | None,
    backfill: dict[str, Any],
) -> dict[str, Any]:
    """``backfill`` holds the public id, job, title, status and counts at the event."""
    if fmt is PayloadFormat.SLACK:
        title = f" “{backfill['title']}”" if backfill.get("title") else ""
        counts = backfill["counts"]
        text = (
            f"Backfill {backfill['id']}{title} of job `{backfill['job']}` {_VERBS[event]}: "
            f"{counts['succeeded']} succeeded, {counts['failed']} failed, "
            f"{counts['total']} partitions."
        )
        if message:
            text += f"\n{message}"
        return {"text": text}
    return {
        "id": key,
        "event": event.value,
        "occurredAt": at.isoformat(),
        "message": message,
        "backfill": backfill,
    }
