"""Small typed helpers over SQLAlchemy results."""

from __future__ import annotations

from typing import Any

from sqlalchemy import CursorResult, Result


def changed(result: Result[Any]) -> int:
    """Rows matched by an UPDATE or DELETE (typed, instead of a ``rowcount`` type-ignore)."""
    assert isinstance(result, CursorResult)
    return int(result.rowcount)
