"""What every resolver receives: the long-lived services and the request's own facts."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any

import strawberry
from cachetools import LRUCache
from graphql import GraphQLError

from backfiller.config import Settings
from backfiller.definitions.loading import Definitions
from backfiller.resolvers.access import Principal, RateLimiter
from backfiller.schema.backfills import PartitionStatusRange
from backfiller.services.backend import Backend
from backfiller.storage import Database

if TYPE_CHECKING:
    from backfiller.resolvers.assets import StorageAssetReads as AssetReadsImpl
    from backfiller.resolvers.source import StorageSource


@dataclass
class Services(Backend):
    """Long-lived: one per server process. The services' :class:`Backend` (its pin cache
    included), plus the caches and limits of the API."""

    # Partition status ranges by (backfill id, version, planned).
    status_ranges: LRUCache[tuple[int, int, int], list[PartitionStatusRange]] = field(
        default_factory=lambda: LRUCache(maxsize=64)
    )
    rate_limiter: RateLimiter = field(default_factory=RateLimiter)


@dataclass
class AuditDraft:
    """The audit entry of the mutation being resolved, written exactly once: in the mutation's
    own transaction when it succeeds (see ``auth.success_audit``), else by the
    ``Authorize`` extension once the mutation has answered."""

    operation: str
    subject: str | None
    written: bool = False


@dataclass
class Context:
    """Per request."""

    services: Services
    source: StorageSource
    actor: str | None = None
    request_id: str = ""
    extra: dict[str, Any] = field(default_factory=dict)
    principal: Principal | None = None
    # The bearer token the caller presented (None without one): a trigger pressed by this
    # caller reaches the API with it through ``context.client``.
    token: str | None = None
    """Who asks; None is refused by every field (deny by default)."""
    connection_params: dict[str, Any] | None = None
    """The ``connection_init`` payload of a WebSocket (where browsers put their token)."""
    client: str | None = None
    """The client's address (the rate limit's bucket of a caller without a token)."""
    audit: AuditDraft | None = None
    """The audit entry of the mutation being resolved (mutations run one at a time)."""

    @property
    def database(self) -> Database:
        return self.services.database

    @property
    def team(self) -> str | None:
        """The team the caller acts for (its token's or session's; None: no team)."""
        return self.principal.team if self.principal is not None else None

    @property
    def assets(self) -> AssetReadsImpl:
        """Reads of assets and asset backfills (``schema.asset_backfills.AssetReads``)."""
        from backfiller.resolvers.assets import StorageAssetReads

        return StorageAssetReads(self.services)

    @property
    def definitions(self) -> Definitions:
        return self.services.definitions

    def now(self) -> datetime:
        return self.services.clock()


Info = strawberry.Info[Context, None]


class PublicError(GraphQLError):
    """A query-level error that is safe to show (bad cursor, bad argument): not masked."""

    def __init__(self, message: str, code: str = "INVALID_ARGUMENT") -> None:
        super().__init__(message, extensions={"code": code})


def check_page_size(first: int, settings: Settings) -> int:
    if first < 0:
        raise PublicError("`first` must not be negative")
    if first > settings.max_page_size:
        raise PublicError(f"`first` must be at most {settings.max_page_size}")
    return first
