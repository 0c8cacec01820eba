"""Metrics of webhook deliveries (on the daemon's ``/metrics``)."""

from __future__ import annotations

from prometheus_client import Counter, Gauge

ATTEMPTS = Counter(
    "backfiller_notify_attempts_total",
    "Webhook delivery attempts, by outcome: delivered, http_error, timed_out, "
    "connection_failed, refused (an address the webhook policy refuses), failed.",
    ["outcome"],
)
DEFERRED = Counter(
    "backfiller_notify_deferred_total",
    "Due webhook deliveries a look read and left waiting for lack of room: their "
    "destination had its share of delivery slots (destination_busy), or every slot was "
    "taken (no_slot). They stay in the database and are started at a later look (the "
    "deliveries of a destination already busy are not even read).",
    ["reason"],
)
IN_FLIGHT = Gauge("backfiller_notify_in_flight", "Webhook deliveries in flight now.")
