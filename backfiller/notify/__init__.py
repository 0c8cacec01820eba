"""Webhook notifications of backfill lifecycle events, delivered by the daemon.

``events`` decides what a stored backfill event means to a receiver (pure); ``payloads``
builds the generic and the Slack-compatible bodies; ``signing`` signs them; ``notifier`` is
the daemon's task that creates, claims and delivers notifications without blocking its loop;
``slots`` shares the delivery slots out per destination; ``delivery`` makes one attempt,
bounded in time and memory; ``addresses`` says which addresses a webhook may not reach (and
the admin's allow-list), and ``egress`` is the HTTP client that connects only to the
addresses it checked.
"""
