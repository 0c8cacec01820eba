"""The ``backfiller`` command: server-side commands and, beside them, a client of the API."""

from __future__ import annotations

from backfiller.cli.app import app, main

__all__ = ["app", "main"]
