"""Secrets kept out of every log line of the process, whichever logger or handler writes it.

:func:`redact` scrubs a text: bearer values, API tokens (``bft_...``), run credentials
(``bfr_...``), passwords inside URLs (``scheme://user:...@``), the path and query of every
URL (a Slack webhook's path is its secret; a broker's or database's URL is reduced to where it
points), and the values of the secret environment variables.

:func:`install` makes every record the process creates pass through :func:`redact` (message,
arguments and traceback), by the logging module's record factory: the records of third-party
loggers (httpx, uvicorn, Celery, kombu...) are created there too, so they are clean whichever
handler (the service's, or one a library installs itself) writes them. :class:`Redaction` is
the same as a filter, for records made elsewhere (``logging.makeLogRecord``) and handed to a
handler; it leaves alone a record the factory already scrubbed.
"""

from __future__ import annotations

import logging
import os
import re
from collections.abc import Callable
from typing import Any

SECRET_VARIABLES = ("BACKFILLER_WEBHOOK_SECRET", "BACKFILLER_TOKEN", "BACKFILLER_BROKER_KEY")
REDACTED = "[REDACTED]"
_DONE = "_backfiller_redacted"

_PATTERNS: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"(?i)(bearer\s+)[^\s\"',;]+"), r"\1" + REDACTED),
    (re.compile(r"(?i)(basic\s+)[A-Za-z0-9+/=]{8,}"), r"\1" + REDACTED),
    (re.compile(r"bft_[A-Za-z0-9_\-]{8,}"), "bft_" + REDACTED),
    (re.compile(r"bfr_[A-Za-z0-9_\-.]{8,}"), "bfr_" + REDACTED),
    # scheme://user:password@ (any scheme: databases, brokers, webhooks)
    (
        re.compile(r"(?i)\b([a-z][a-z0-9+.\-]*://[^:/@\s\"'<>]*):[^@\s\"'<>]+@"),
        r"\1:" + REDACTED + "@",
    ),
    # The path, query and fragment of a URL of the web or of a broker: past its authority.
    (
        re.compile(
            r"(?i)\b((?:https?|wss?|rediss?|amqps?|pyamqp|sqs)://[^/?#\s\"'<>]+)[/?#][^\s\"'<>]*"
        ),
        r"\1/" + REDACTED,
    ),
)


_ANY = re.compile(r"(?i)bearer|basic|bf[tr]_|://")
"""Whether any pattern may apply: most lines (an access line) need none of the others."""


def redact(text: str) -> str:
    """``text`` without tokens, credentials, URL passwords and paths, or secret values."""
    if _ANY.search(text) is not None:
        for pattern, replacement in _PATTERNS:
            text = pattern.sub(replacement, text)
    return _without_secret_values(text)


_secret_values: tuple[str, ...] | None = None


def secret_values() -> tuple[str, ...]:
    """The values of :data:`SECRET_VARIABLES`, read once per process (they are set before it
    starts); :func:`forget_secret_values` reads them again."""
    global _secret_values
    if _secret_values is None:
        found = (os.environ.get(name) or "" for name in SECRET_VARIABLES)
        _secret_values = tuple(v for v in found if len(v) >= 4)
    return _secret_values


def remember_secret_value(value: str) -> None:
    """Scrub ``value`` too (a secret read from a file, or taken out of the environment)."""
    global _secret_values
    if len(value) >= 4 and value not in secret_values():
        _secret_values = (*secret_values(), value)


def forget_secret_values() -> None:
    global _secret_values
    _secret_values = None


def _without_secret_values(text: str) -> str:
    for value in secret_values():
        if value in text:
            text = text.replace(value, REDACTED)
    return text


def scrub(record: logging.LogRecord) -> None:
    """Replace the record's message (arguments merged in) and traceback by redacted ones."""
    if getattr(record, _DONE, False):
        return
    try:
        message = record.getMessage()
    except Exception:  # arguments that do not fit the format: keep what can be shown
        message = f"{record.msg} {record.args!r}"
    record.msg, record.args = redact(message), None
    if record.exc_info and not record.exc_text:
        record.exc_text = logging.Formatter().formatException(record.exc_info)
    if record.exc_text:
        record.exc_text = redact(record.exc_text)
    if record.stack_info:
        record.stack_info = redact(record.stack_info)
    setattr(record, _DONE, True)


def verbatim(record: logging.LogRecord) -> logging.LogRecord:
    """``record``, marked as scrubbed already: for a line made of the process's own settings
    alone (the address it serves, whose URL path the patterns would cut), never of a text that
    holds anything the process was given."""
    setattr(record, _DONE, True)
    return record


class Redaction(logging.Filter):
    """Scrubs a record (see :func:`scrub`); never drops one."""

    def filter(self, record: logging.LogRecord) -> bool:
        scrub(record)
        return True


_previous: Callable[..., logging.LogRecord] | None = None


def install() -> None:
    """Scrub every record this process creates from now on (idempotent)."""
    global _previous
    if _previous is not None:
        return
    previous = logging.getLogRecordFactory()

    def factory(*args: Any, **kwargs: Any) -> logging.LogRecord:
        record = previous(*args, **kwargs)
        if record.msg or record.exc_info:
            scrub(record)
        return record

    _previous = previous
    logging.setLogRecordFactory(factory)


def uninstall() -> None:
    """Back to the record factory before :func:`install` (for tests)."""
    global _previous
    if _previous is not None:
        logging.setLogRecordFactory(_previous)
        _previous = None
