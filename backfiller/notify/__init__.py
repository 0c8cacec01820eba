"""Webhook notifications of backfill lifecycle events, delivered by the daemon.

``events`` decides what a stored backfill event means to a receiver (pure); ``payloads``
builds the generic and the Slack-compatible bodies; ``signing`` signs them; ``notifier`` is
the daemon's task that creates, claims and delivers notifications without blocking its loop.
"""
