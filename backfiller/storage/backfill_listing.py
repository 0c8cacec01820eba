"""What the filtered list of backfills reads beside ``backfills``: the assets of each asset
backfill (one row each) and the indexes of the list's filters.

The list is newest first (``id`` descending) and filters by status, job, asset, creator, team, tags,
title text and creation time (``backfill_reads.backfill_rows``). Each filter has an index
that lets the database find a page of matches without reading every backfill:

- ``backfill_assets (asset, backfill_id)``: an asset backfill's assets, written at launch;
- ``ix_backfills_creator_id (creator, id)``: one creator's backfills, already in list order;
- ``ix_backfills_created_at (created_at)``: a time window;
- ``ix_backfills_team_id (team, id)``: one team's backfills, already in list order;
- ``ix_backfills_title_trgm``: on PostgreSQL a GIN trigram index (``pg_trgm``) that answers
  ``title ILIKE '%text%'`` without a scan; on SQLite a plain index on ``title``, which a
  ``LIKE`` reads instead of the wider table.

(Status, job and tag use the indexes that the first migrations made.)
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from sqlalchemy import Connection, ForeignKey, Index, String, insert
from sqlalchemy.orm import Mapped, mapped_column

from backfiller.storage.base import Base, table_of
from backfiller.storage.prepared import Prepared
from backfiller.storage.records import BackfillRecord


class BackfillAssetRecord(Base):
    """One asset of an asset backfill's selection, so that backfills can be listed by asset."""

    __tablename__ = "backfill_assets"

    asset: Mapped[str] = mapped_column(String(200), primary_key=True)
    backfill_id: Mapped[int] = mapped_column(
        ForeignKey("backfills.id", ondelete="CASCADE"), primary_key=True
    )


_BACKFILLS = table_of(BackfillRecord)

LIST_INDEXES = (
    Index("ix_backfills_creator_id", _BACKFILLS.c.creator, _BACKFILLS.c.id),
    Index("ix_backfills_created_at", _BACKFILLS.c.created_at),
    Index("ix_backfills_team_id", _BACKFILLS.c.team, _BACKFILLS.c.id),
    Index(
        "ix_backfills_title_trgm",
        _BACKFILLS.c.title,
        postgresql_using="gin",
        postgresql_ops={"title": "gin_trgm_ops"},
    ),
)
"""The list's indexes on ``backfills`` (made by migration 0031; the team's by 0047)."""

_INSERT_ASSET = Prepared(insert(table_of(BackfillAssetRecord)))


def asset_names(asset_target: dict[str, Any] | None) -> list[str]:
    """The assets of an asset backfill's stored target; none for a job backfill."""
    if asset_target is None:
        return []
    return sorted({str(part["name"]) for part in asset_target.get("parts", ())})


def add_asset_names(
    conn: Connection, backfills: Iterable[tuple[int, dict[str, Any] | None]]
) -> None:
    """Record the assets of the asset backfills among ``(id, asset_target)``, at launch."""
    rows = [
        {"asset": name, "backfill_id": pk}
        for pk, target in backfills
        for name in asset_names(target)
    ]
    if rows:
        _INSERT_ASSET.many(conn, rows)


__all__ = ["LIST_INDEXES", "BackfillAssetRecord", "add_asset_names", "asset_names"]
