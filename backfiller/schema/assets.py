"""Public types of asset backfills: the asset selection input and what a backfill says of it."""

from __future__ import annotations

import strawberry


@strawberry.input(
    description="Assets to backfill: the named ones, and optionally everything upstream "
    "and/or downstream of them. Partitions select the root assets' partitions, mapped "
    "through the graph to the others."
)
class AssetSelectionInput:
    names: list[str] = strawberry.field(description="Asset names (at least one).")
    upstream: bool = strawberry.field(
        default=False, description="Also every asset the named ones depend on."
    )
    downstream: bool = strawberry.field(
        default=False, description="Also every asset that depends on the named ones."
    )


@strawberry.type(description="The assets of an asset backfill, as asked and as resolved.")
class AssetSelection:
    names: list[str] = strawberry.field(description="The asset names as asked.")
    upstream: bool
    downstream: bool
    assets: list[str] = strawberry.field(
        description="Every asset the backfill covers, in dependency order."
    )
