"""Keyset pagination shared by every connection: cursors in, page information out."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from backfiller.ids import decode_cursor
from backfiller.resolvers.context import PublicError
from backfiller.schema.common import PageInfo

INT64_MAX = 2**63 - 1


class _Edge(Protocol):
    @property
    def cursor(self) -> str: ...


def cursor_value(kind: str, after: str | None) -> int | None:
    """The position inside an ``after`` cursor of ``kind``; a foreign cursor is refused."""
    try:
        value = decode_cursor(kind, after)
    except ValueError:
        value = INT64_MAX + 1
    if value is not None and not -INT64_MAX <= value <= INT64_MAX:
        # Tampered (or from another list): a typed error, never a database overflow.
        raise PublicError("`after` is not a cursor of this list")
    return value


def page_info(edges: Sequence[_Edge], has_next: bool, after: str | None) -> PageInfo:
    """Relay page information of one page of ``edges``."""
    return PageInfo(
        has_next_page=has_next,
        has_previous_page=after is not None,
        start_cursor=edges[0].cursor if edges else None,
        end_cursor=edges[-1].cursor if edges else None,
    )
