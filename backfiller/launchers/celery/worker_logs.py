"""What Celery's worker writes itself, under ``--log-format json``: log lines too.

Celery's worker leaves the root logger to the service (``worker_hijack_root_logger`` off, see
``app.py``), so its loggers, kombu's and the runs' go through the service's lines. Past them it
writes for a person at a terminal: its banner (on stdout, at start) and its shutdown notes
(``worker: Warm shutdown (MainProcess)``, written straight to the file descriptor). With
``--log-format json`` the banner is left out (``--quiet``: the worker's ``ready.`` line says it
is up), each note becomes a WARNING of the ``celery.apps.worker`` logger, and Celery adds
no handler of its own (to its task logger, to its pool's logger): with ``text`` all stay as
Celery writes them.
"""

from __future__ import annotations

import logging
from typing import Any

NOTES_LOGGER = "celery.apps.worker"


def celery_options() -> list[str]:
    """The options of the ``celery`` command (before ``worker``) that the log format asks for."""
    from backfiller.logs import json_logs

    return ["--quiet"] if json_logs() else []


def json_lines_only() -> None:
    """Under ``--log-format json``: Celery sets up no logging of its own (its task logger's
    handler, its pool's), and its notes to the terminal become log records."""
    from backfiller.logs import json_logs

    if not json_logs():
        return
    from celery.apps import worker
    from celery.signals import setup_logging

    # A receiver of setup_logging tells Celery that the process's logging is set up already.
    setup_logging.connect(_already_set_up, weak=False)

    notes = logging.getLogger(NOTES_LOGGER)

    def say(message: Any, f: Any = None) -> None:
        # Called from signal handlers too: the logging module's locks are reentrant.
        notes.warning("%s", str(message).strip())

    worker.safe_say = say


def _already_set_up(**kwargs: Any) -> None:
    """The service's logging (``backfiller.logs``) is the worker's."""
