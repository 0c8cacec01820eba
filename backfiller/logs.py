"""How the server processes log: one line per record on stderr.

Shared by the commands (``serve``, ``daemon``, ``dev``) and by each process of
``serve --workers N`` (``web/workers.py``), so neither has to import the other.
"""

from __future__ import annotations

import logging

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
