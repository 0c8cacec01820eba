"""Structured logs: ``--log-format json|text``, context fields, and secrets kept out.

Every line carries, where they apply, ``request_id``, ``actor``, ``backfill_id`` and
``run_id``: code binds them for the duration of a piece of work with :func:`bound` (a
context variable, so concurrent requests and tasks keep their own), and a filter copies them
onto each record. The same filter scrubs what must never be written: bearer tokens and API
tokens (``bft_...``), passwords inside URLs, and the values of secret environment variables,
whatever the message or its arguments hold.
"""

from __future__ import annotations

import contextlib
import contextvars
import json
import logging
import os
import re
import sys
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

FORMAT_VARIABLE = "BACKFILLER_LOG_FORMAT"
FIELDS = ("request_id", "actor", "backfill_id", "run_id")
SECRET_VARIABLES = ("BACKFILLER_WEBHOOK_SECRET", "BACKFILLER_TOKEN")
REDACTED = "[REDACTED]"

_context: contextvars.ContextVar[dict[str, Any] | None] = contextvars.ContextVar(
    "backfiller_log_context", default=None
)
_PATTERNS = (
    (re.compile(r"(?i)(bearer\s+)[^\s\"',;]+"), r"\1" + REDACTED),
    (re.compile(r"bft_[A-Za-z0-9_\-]{8,}"), "bft_" + REDACTED),
    (re.compile(r"(?i)\b([a-z][a-z0-9+.\-]*://[^:/@\s]*):[^@/\s]+@"), r"\1:" + REDACTED + "@"),
)


def bind(**fields: Any) -> contextvars.Token[dict[str, Any] | None]:
    """Add fields to the log context until :func:`unbind` with the returned token."""
    current = _context.get() or {}
    return _context.set({**current, **{k: v for k, v in fields.items() if v is not None}})


def unbind(token: contextvars.Token[dict[str, Any] | None]) -> None:
    _context.reset(token)


@contextlib.contextmanager
def bound(**fields: Any) -> Iterator[None]:
    token = bind(**fields)
    try:
        yield
    finally:
        unbind(token)


def context_fields() -> dict[str, Any]:
    return dict(_context.get() or {})


def redact(text: str) -> str:
    """``text`` without tokens, URL passwords or secret environment values."""
    for pattern, replacement in _PATTERNS:
        text = pattern.sub(replacement, text)
    for name in SECRET_VARIABLES:
        value = os.environ.get(name)
        if value and len(value) >= 4:
            text = text.replace(value, REDACTED)
    return text


class ContextAndRedaction(logging.Filter):
    """Copies the bound context onto records and scrubs their message (never drops one)."""

    def filter(self, record: logging.LogRecord) -> bool:
        for key, value in (_context.get() or {}).items():
            if not hasattr(record, key):
                setattr(record, key, value)
        try:
            message = record.getMessage()
        except Exception:
            message = str(record.msg)
        if record.exc_info and not record.exc_text:
            record.exc_text = logging.Formatter().formatException(record.exc_info)
        cleaned = redact(message)
        record.msg, record.args = cleaned, None
        if record.exc_text:
            record.exc_text = redact(record.exc_text)
        return True


class JsonFormatter(logging.Formatter):
    """One JSON object per line: time, level, logger, message, context fields, exception."""

    def format(self, record: logging.LogRecord) -> str:
        line: dict[str, Any] = {
            "time": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
        }
        for key in FIELDS:
            value = getattr(record, key, None)
            if value is not None:
                line[key] = value
        if record.exc_text:
            line["exception"] = record.exc_text
        return json.dumps(line, default=str)


class TextFormatter(logging.Formatter):
    """The classic line, with the context fields that apply appended as ``key=value``."""

    def __init__(self) -> None:
        super().__init__("%(asctime)s %(levelname)s %(name)s: %(message)s")

    def format(self, record: logging.LogRecord) -> str:
        text = super().format(record)
        extra = [f"{k}={getattr(record, k)}" for k in FIELDS if getattr(record, k, None)]
        return f"{text} [{' '.join(extra)}]" if extra else text


def configure(level: str = "INFO", fmt: str | None = None, *, locate: bool = True) -> None:
    """Configure the root logger once per process: format from ``fmt`` or
    ``$BACKFILLER_LOG_FORMAT`` (json or text, text by default).

    ``locate=False`` stops the records of the whole process from noting where they were
    logged from and on which thread and process, which neither format shows: a walk up the
    stack saved on every record (an access line per request). For the service's own processes
    only; a worker, whose runs' code may log with its own handlers, keeps them."""
    chosen = (fmt or os.environ.get(FORMAT_VARIABLE) or "text").lower()
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(JsonFormatter() if chosen == "json" else TextFormatter())
    handler.addFilter(ContextAndRedaction())
    root = logging.getLogger()
    for old in list(root.handlers):
        root.removeHandler(old)
    root.addHandler(handler)
    root.setLevel(level)
    if not locate:  # the switches of the logging HOWTO's "Optimization" section
        logging._srcfile = None
        logging.logThreads = False
        logging.logProcesses = False
        logging.logMultiprocessing = False
