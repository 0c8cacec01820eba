"""How the server processes log: one line per record on stderr.

Shared by the commands (``serve``, ``daemon``, ``dev``) and by each process of
``serve --workers N`` (``web/workers.py``), so neither has to import the other.
"""

from __future__ import annotations

import logging
import sys

# Libraries whose INFO lines say nothing an operator acts on (Alembic lists its plugins and
# each migration step at every start).
QUIET_LOGGERS = ("alembic",)


def configure_logging(level: str = "INFO") -> None:
    logging.basicConfig(
        level=level,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
        stream=sys.stderr,
    )
    for name in QUIET_LOGGERS:
        logging.getLogger(name).setLevel(max(logging.WARNING, logging.getLogger().level))
