"""How the server processes log: one line per record on stderr.

Shared by the commands (``serve``, ``daemon``, ``dev``) and by each process of
``serve --workers N`` (``web/workers.py``), so neither has to import the other.
"""

from __future__ import annotations

import logging
import sys

COMMAND_LOGGER = "backfiller.command"
"""The logger of the lines a command writes for the person who started it (:func:`announce`)."""
_PREFIXES = {logging.WARNING: "warning: ", logging.ERROR: "error: "}

# Libraries whose INFO lines say nothing an operator acts on (Alembic lists its plugins and
# each migration step at every start).
QUIET_LOGGERS = ("alembic",)


def configure_logging(level: str = "INFO") -> None:
    """Lines as ``--log-format`` / ``$BACKFILLER_LOG_FORMAT`` say (with context fields, and
    never a secret: :mod:`backfiller.observability.logs`), without the libraries' chatter;
    tracing too when ``--otlp-endpoint`` is given (:mod:`backfiller.observability.process`).
    Records do not note where they were logged from (no format shows it; these processes run
    no job's code)."""
    from backfiller.observability.process import setup

    setup(level, locate=False)
    for name in QUIET_LOGGERS:
        logging.getLogger(name).setLevel(max(logging.WARNING, logging.getLogger().level))
    logging.getLogger(COMMAND_LOGGER).setLevel(logging.INFO)  # at any --loglevel, as in text


def json_logs() -> bool:
    """Whether this process logs ``--log-format json`` (every line one JSON object)."""
    from backfiller.observability.logs import chosen_format

    return chosen_format() == "json"


def announce(message: str, level: int = logging.INFO, *, verbatim: bool = False) -> None:
    """A line a command writes for the person who started it (the address it serves, a warning
    about an option, why it refuses to start), on stderr, whatever the log level: as it reads
    (``warning: ...``, ``error: ...``) with ``--log-format text``, a record of the
    ``backfiller.command`` logger with ``json``, so that every line is a JSON object.

    ``verbatim``: a line made of the command's own settings alone (the address it serves), that
    redaction would cut (it takes the path out of every URL); secrets are scrubbed from all
    others."""
    if not json_logs():
        print(f"{_PREFIXES.get(level, '')}{message}", file=sys.stderr, flush=True)
        return
    if not logging.getLogger().handlers:  # a command that logs nothing else (db, token)
        configure_logging()
    logger = logging.getLogger(COMMAND_LOGGER)
    if not verbatim:
        logger.log(level, message)
    elif logger.isEnabledFor(level):
        from backfiller.observability.redaction import verbatim as as_is

        logger.handle(as_is(logging.LogRecord(logger.name, level, "", 0, message, None, None)))
