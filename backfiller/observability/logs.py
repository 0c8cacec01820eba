"""Structured logs: ``--log-format json|text``, context fields, secrets kept out, and one
line per record.

Every line carries, where they apply, ``request_id``, ``actor``, ``backfill_id``, ``run_id``
and ``trace_id`` (a worker's lines about a run, when tracing is on): code binds them for the
duration of a piece of work with :func:`bound` (a context variable, so concurrent requests and
tasks keep their own), and a filter copies them onto each record. What must never be written
(tokens, credentials, URL passwords and paths, secret values) is scrubbed from every record
the process creates, third-party loggers' included (:mod:`.redaction`, installed by
:func:`configure`).

Nothing a request sends can forge a line: the text format escapes control characters in the
message (a newline in a path is written ``\\n``) and indents every further line of a record
(a traceback), so a line that starts at the margin is always a record's first; the JSON
format escapes them by construction.
"""

from __future__ import annotations

import contextlib
import contextvars
import json
import logging
import os
import sys
import threading
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

from backfiller.observability import redaction
from backfiller.observability.redaction import REDACTED, SECRET_VARIABLES, redact

FORMAT_VARIABLE = "BACKFILLER_LOG_FORMAT"
FIELDS = ("request_id", "actor", "backfill_id", "run_id", "trace_id")
__all__ = ["REDACTED", "SECRET_VARIABLES", "redact"]

_context: contextvars.ContextVar[dict[str, Any] | None] = contextvars.ContextVar(
    "backfiller_log_context", default=None
)
_CONTROLS = {
    **{c: f"\\x{c:02x}" for c in (*range(0x20), 0x7F, *range(0x80, 0xA0))},
    **{c: f"\\u{c:04x}" for c in (0x2028, 0x2029, *range(0x202A, 0x202F), *range(0x2066, 0x206A))},
    ord("\n"): "\\n",
    ord("\r"): "\\r",
    ord("\t"): "\\t",
}


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


def escape_controls(text: str) -> str:
    """``text`` with control characters (newlines included), line separators and bidi
    overrides written as escapes: one line, that reads as it is."""
    return text if text.isprintable() else text.translate(_CONTROLS)


class ContextAndRedaction(logging.Filter):
    """Copies the bound context onto records and scrubs them (never drops one): the records
    that :func:`redaction.install` did not scrub when they were made are scrubbed here."""

    def filter(self, record: logging.LogRecord) -> bool:
        for key, value in (_context.get() or {}).items():
            if not hasattr(record, key):
                setattr(record, key, value)
        redaction.scrub(record)
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
        if record.exc_info and not record.exc_text:
            record.exc_text = self.formatException(record.exc_info)
        if record.exc_text:
            line["exception"] = record.exc_text
        if record.stack_info:
            line["stack"] = self.formatStack(record.stack_info)
        return json.dumps(line, default=str)


class TextFormatter(logging.Formatter):
    """The classic line, with the context fields that apply appended as ``key=value``; the
    message on that one line (control characters escaped), a traceback on indented lines."""

    def __init__(self) -> None:
        super().__init__("%(asctime)s %(levelname)s %(name)s: %(message)s")

    def format(self, record: logging.LogRecord) -> str:
        record.message = escape_controls(record.getMessage())
        if self.usesTime():
            record.asctime = self.formatTime(record, self.datefmt)
        text = self.formatMessage(record)
        extra = [
            f"{k}={escape_controls(str(getattr(record, k)))}"
            for k in FIELDS
            if getattr(record, k, None)
        ]
        if extra:
            text = f"{text} [{' '.join(extra)}]"
        if record.exc_info and not record.exc_text:
            record.exc_text = self.formatException(record.exc_info)
        for block in (record.exc_text, record.stack_info and self.formatStack(record.stack_info)):
            if block:
                text += "".join(f"\n    {line}" for line in block.splitlines())
        return text


def chosen_format(fmt: str | None = None) -> str:
    """``json`` or ``text``: ``fmt``, else ``$BACKFILLER_LOG_FORMAT``, else text."""
    return (
        "json" if (fmt or os.environ.get(FORMAT_VARIABLE) or "text").lower() == "json" else "text"
    )


def configure(
    level: str = "INFO",
    fmt: str | None = None,
    *,
    locate: bool = True,
    scrub_every_record: bool = True,
) -> None:
    """Configure the root logger once per process: format from ``fmt`` or
    ``$BACKFILLER_LOG_FORMAT`` (json or text, text by default).

    ``locate=False`` stops the records of the whole process from noting where they were
    logged from and on which thread and process, which neither format shows: a walk up the
    stack saved on every record (an access line per request). For the service's own processes
    only; a worker, whose runs' code may log with its own handlers, keeps them.

    ``scrub_every_record`` scrubs every record the process creates, for any handler
    (:func:`redaction.install`); without it, only what this handler writes is scrubbed: a
    local worker's runs keep their own log lines as their code wrote them."""
    chosen = chosen_format(fmt)
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(JsonFormatter() if chosen == "json" else TextFormatter())
    handler.addFilter(ContextAndRedaction())
    if scrub_every_record:
        redaction.install()  # every record of the process, whichever handler writes it
    root = logging.getLogger()
    for old in list(root.handlers):
        root.removeHandler(old)
    root.addHandler(handler)
    root.setLevel(level)
    if chosen == "json":
        everything_through(handler)
    if not locate:  # the switches of the logging HOWTO's "Optimization" section
        logging._srcfile = None
        logging.logThreads = False
        logging.logProcesses = False
        logging.logMultiprocessing = False


def everything_through(handler: logging.Handler) -> None:
    """What the process would write past the root logger goes through ``handler`` too, for
    ``--log-format json`` (every line one object): Python's warnings (``py.warnings``), the
    ``multiprocessing`` logger (its own, not propagating, that Celery's pool logs to), and an
    exception that nothing caught, in the main thread or another (``backfiller.uncaught``)."""
    logging.captureWarnings(True)
    processes = logging.getLogger("multiprocessing")
    processes.propagate = False
    if handler not in processes.handlers:
        processes.handlers = [handler]
    uncaught = logging.getLogger("backfiller.uncaught")

    def log_uncaught(kind: type[BaseException], error: BaseException, trace: Any) -> None:
        if issubclass(kind, KeyboardInterrupt):
            uncaught.warning("interrupted")
        else:
            uncaught.critical(
                "uncaught %s: %s", kind.__name__, error, exc_info=(kind, error, trace)
            )

    def log_thread_uncaught(args: threading.ExceptHookArgs) -> None:
        if args.exc_value is not None and not isinstance(args.exc_value, SystemExit):
            uncaught.critical(
                "uncaught %s in thread %s: %s",
                args.exc_type.__name__,
                args.thread.name if args.thread else "?",
                args.exc_value,
                exc_info=(args.exc_type, args.exc_value, args.exc_traceback),
            )

    sys.excepthook = log_uncaught
    threading.excepthook = log_thread_uncaught
