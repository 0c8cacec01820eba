"""Reads of backfill rows for the API's hot paths: Core statements, rows rather than records.

A row has the attributes of a :class:`BackfillRecord` that the API returns (the same names,
the same types after SQLAlchemy's result processing) but its JSON columns, which come as
their stored text under ``<column>_json`` (``keys_json``, ``tags_json``, ``run_config_json``,
``asset_target_json``): a page of 100 backfills decodes only what the request returns, when
it is returned (:class:`JsonArray`, :func:`json_value`), so a backfill of 50,000 explicit keys
costs the listing no more than one of a range. Read through ``Database.query``, a row costs no
ORM identity map, no instance state and no async session: for ``backfill(id)``, the
``backfills`` page and progress polling. Synchronous functions of a Core connection, like
``add_backfill``.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Sequence
from datetime import datetime
from typing import Any, Generic, NamedTuple, TypeVar, overload

from sqlalchemy import Connection, Select, Text, and_, bindparam, cast, exists, select, union_all

from backfiller.domain import BackfillKind, BackfillState, Order, Reprocess, SelectionKind
from backfiller.storage.backfill_listing import BackfillAssetRecord
from backfiller.storage.records import BackfillRecord, BackfillTagRecord
from backfiller.storage.repositories import BackfillQuery


class BackfillRow(NamedTuple):
    """A row of ``backfills`` as the API reads it: the columns that public fields show (with
    ``version``, for progress), JSON columns as their stored text. A named tuple: reading an
    attribute of SQLAlchemy's ``Row`` costs ten times an index, and a page reads 30 a row."""

    id: int
    kind: BackfillKind
    job_name: str
    selection_kind: SelectionKind
    range_start: str | None
    range_end: str | None
    reprocess: Reprocess
    order: Order
    max_concurrent_runs: int | None
    title: str | None
    description: str | None
    status: BackfillState
    error: str | None
    creator: str | None
    parent_id: int | None
    created_at: datetime
    started_at: datetime | None
    ended_at: datetime | None
    updated_at: datetime
    total: int
    pending: int
    queued: int
    running: int
    succeeded: int
    failed: int
    canceled: int
    skipped: int
    version: int
    team: str | None
    priority: int
    keys_json: str | None
    run_config_json: str | None
    tags_json: str | None
    asset_target_json: str | None


T = TypeVar("T")

_BACKFILLS = BackfillRecord.__table__
_TAGS = BackfillTagRecord.__table__
_ASSETS = BackfillAssetRecord.__table__


def _column(name: str) -> Any:
    if name.endswith("_json"):
        return cast(_BACKFILLS.c[name.removesuffix("_json")], Text).label(name)
    return _BACKFILLS.c[name]


_COLUMNS = tuple(_column(name) for name in BackfillRow._fields)
_BY_ID = select(*_COLUMNS).where(_BACKFILLS.c.id == bindparam("pk"))


def json_value(raw: str | None) -> Any:
    """The value of a JSON column's text; None for SQL NULL and for JSON ``null`` (not
    decoded: most backfills have neither a run config nor an asset target)."""
    if raw is None or raw == "null":
        return None
    return json.loads(raw)


class JsonArray(Sequence[T], Generic[T]):
    """A JSON array column's text, decoded (each item through ``build``) when first read."""

    __slots__ = ("_build", "_items", "_raw")

    def __init__(self, raw: str | None, build: Callable[[Any], T]) -> None:
        self._raw = raw
        self._build = build
        self._items: list[T] | None = None

    def _decoded(self) -> list[T]:
        if self._items is None:
            value = json_value(self._raw)
            self._items = [self._build(item) for item in value or ()]
        return self._items

    @overload
    def __getitem__(self, index: int) -> T: ...

    @overload
    def __getitem__(self, index: slice) -> Sequence[T]: ...

    def __getitem__(self, index: int | slice) -> T | Sequence[T]:
        return self._decoded()[index]

    def __len__(self) -> int:
        return len(self._decoded())

    def __iter__(self) -> Iterator[T]:
        return iter(self._decoded())


def backfill_row(conn: Connection, pk: int) -> BackfillRow | None:
    """The backfill ``pk``, or None."""
    row = conn.execute(_BY_ID, {"pk": pk}).first()
    return None if row is None else BackfillRow._make(row)


def backfill_rows(
    conn: Connection, query: BackfillQuery, limit: int, before_id: int | None
) -> list[BackfillRow]:
    """Up to ``limit`` backfills matching ``query``, newest first; keyset pagination on the id
    (those with an id below ``before_id``)."""
    params: dict[str, Any] = {"limit": limit}
    if before_id is not None:
        params["before"] = before_id
    for i, status in enumerate(query.statuses or ()):
        params[f"status_{i}"] = status
    if query.job_name is not None:
        params["job"] = query.job_name
    tags = [query.tag] if query.tag is not None else []
    tags.extend(t for t in query.tags if t not in tags)
    for n, (key, value) in enumerate(tags):
        params[f"tag_key_{n}"], params[f"tag_value_{n}"] = key, value
    for name in ("asset", "creator", "team", "created_after", "created_before"):
        if getattr(query, name) is not None:
            params[name] = getattr(query, name)
    if query.title_contains:
        params["title"] = f"%{like_escaped(query.title_contains)}%"
    shape = frozenset(params)
    stmt = _pages.get(shape)
    if stmt is None:
        stmt = _pages[shape] = _page_statement(shape)
    return [BackfillRow._make(row) for row in conn.execute(stmt, params).all()]


_pages: dict[frozenset[str], Select[Any]] = {}
"""The page statements, one per set of filters, built once: building a statement and its
cache key costs more than running it on a page of 100."""


def _page_statement(shape: frozenset[str]) -> Select[Any]:
    """The page for the filters of ``shape``, each read from an index in id order, so that a
    page costs about ``limit`` index entries whatever the history: a tag's backfills from
    ``(key, value, backfill_id)``; several statuses as one walk of ``(status, id)`` per status,
    each stopped at ``limit``, merged (an ``IN`` would read every backfill of those statuses
    and sort them); one status from ``(status, id)``, a job from ``(job_name, id)``."""
    table = _BACKFILLS
    statuses = sorted(name for name in shape if name.startswith("status_"))
    if len(statuses) > 1:
        walks = [_ids_of(shape - set(statuses) | {name}) for name in statuses]
        merged = union_all(*walks).subquery()
        return (
            select(*_COLUMNS)
            .where(table.c.id.in_(select(merged.c.id)))
            .order_by(table.c.id.desc())
            .limit(bindparam("limit"))
        )
    stmt = select(*_COLUMNS).order_by(table.c.id.desc()).limit(bindparam("limit"))
    if "tag_key_0" in shape:
        stmt = stmt.join(_TAGS, _TAGS.c.backfill_id == table.c.id).where(
            _TAGS.c.key == bindparam("tag_key_0"), _TAGS.c.value == bindparam("tag_value_0")
        )
        # Ordered by the tag row's copy of the id: the walk of the tag index, newest first.
        stmt = stmt.order_by(None).order_by(_TAGS.c.backfill_id.desc())
    return _filtered(stmt, shape)


def _ids_of(shape: frozenset[str]) -> Any:
    """The ids of one status's page (``shape`` has one ``status_<i>``), as a subquery."""
    table = _BACKFILLS
    stmt = select(table.c.id).order_by(table.c.id.desc()).limit(bindparam("limit"))
    if "tag_key_0" in shape:
        stmt = stmt.join(_TAGS, _TAGS.c.backfill_id == table.c.id).where(
            _TAGS.c.key == bindparam("tag_key_0"), _TAGS.c.value == bindparam("tag_value_0")
        )
    return select(_filtered(stmt, shape).subquery().c.id)


def _filtered(stmt: Select[Any], shape: frozenset[str]) -> Select[Any]:
    """``stmt`` with the cursor, status and job filters of ``shape`` (the cursor on the tag
    row's id when a tag is filtered: the bound of the tag index's walk)."""
    table = _BACKFILLS
    if "before" in shape:
        walked = _TAGS.c.backfill_id if "tag_key_0" in shape else table.c.id
        stmt = stmt.where(walked < bindparam("before"))
    for name in shape:
        if name.startswith("status_"):
            stmt = stmt.where(table.c.status == bindparam(name))
    if "job" in shape:
        stmt = stmt.where(table.c.job_name == bindparam("job"))
    n = 1  # the first tag is the walk's join (``_page_statement``)
    while f"tag_key_{n}" in shape:
        other = _TAGS.alias(f"tag_{n}")  # apart from the walk's join of the first tag
        stmt = stmt.where(
            exists().where(
                and_(
                    other.c.backfill_id == table.c.id,
                    other.c.key == bindparam(f"tag_key_{n}"),
                    other.c.value == bindparam(f"tag_value_{n}"),
                )
            )
        )
        n += 1
    if "asset" in shape:
        stmt = stmt.where(
            exists().where(
                and_(_ASSETS.c.backfill_id == table.c.id, _ASSETS.c.asset == bindparam("asset"))
            )
        )
    if "creator" in shape:
        stmt = stmt.where(table.c.creator == bindparam("creator"))
    if "team" in shape:
        stmt = stmt.where(table.c.team == bindparam("team"))
    if "created_after" in shape:
        stmt = stmt.where(table.c.created_at >= bindparam("created_after"))
    if "created_before" in shape:
        stmt = stmt.where(table.c.created_at < bindparam("created_before"))
    if "title" in shape:
        stmt = stmt.where(table.c.title.ilike(bindparam("title"), escape="\\"))
    return stmt


def like_escaped(text: str) -> str:
    """``text`` as a literal inside a ``LIKE`` pattern whose escape character is ``\\``."""
    return text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
