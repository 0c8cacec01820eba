"""What every server-side process does first: its logs, and tracing when it is asked for."""

from __future__ import annotations

from backfiller.observability import logs, tracing


def setup(level: str = "INFO", *, locate: bool = True) -> None:
    """Logs per ``$BACKFILLER_LOG_FORMAT``; tracing per ``$BACKFILLER_OTLP_ENDPOINT`` (both
    set by the root options ``--log-format`` and ``--otlp-endpoint``). ``locate``: as
    :func:`backfiller.observability.logs.configure`'s."""
    logs.configure(level, locate=locate)
    tracing.configure()
