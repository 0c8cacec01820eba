"""``INSERT ... ON CONFLICT`` in the dialect at hand.

SQLAlchemy builds it per dialect (``sqlalchemy.dialects.<name>.insert``): the one place that
picks the dialect's, for every repository that inserts once per key.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import Table


def upsert(dialect: str, table: Table | Any) -> Any:
    """An insert of ``table`` that takes ``on_conflict_do_nothing`` / ``on_conflict_do_update``."""
    if dialect == "postgresql":
        from sqlalchemy.dialects import postgresql

        return postgresql.insert(table)
    from sqlalchemy.dialects import sqlite

    return sqlite.insert(table)
