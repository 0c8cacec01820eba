"""Settings, read once at start and passed down explicitly."""

from __future__ import annotations

import enum
import os
from dataclasses import dataclass, field, replace

FAST_PATHS_VARIABLE = "BACKFILLER_FAST_PATHS"


def fast_paths_from_env() -> bool:
    """Whether the speed paths are on: yes, unless ``BACKFILLER_FAST_PATHS`` says 0 (or
    false, no, off). The default of :attr:`Settings.fast_paths` and of ``Database``'s."""
    return os.environ.get(FAST_PATHS_VARIABLE, "1").strip().lower() not in (
        "0",
        "false",
        "no",
        "off",
    )


class AuthMode(enum.StrEnum):
    """Who may call the API."""

    TOKEN = "token"
    """Every request needs a valid token (the default)."""
    NONE = "none"
    """Anyone who reaches the server, as an admin: for a server bound to the loopback."""


@dataclass(frozen=True, slots=True)
class Settings:
    """Everything the service can be told, with the embedded defaults.

    Environment variables (``BACKFILLER_*``) fill what flags leave unset.
    """

    database_url: str | None = None
    definitions: str | None = None
    host: str = "127.0.0.1"
    port: int = 8000
    max_partitions_per_backfill: int = 5_000_000
    max_page_size: int = 100
    max_query_depth: int = 12
    max_query_tokens: int = 5_000
    max_aliases: int = 30
    max_body_bytes: int = 1024 * 1024
    graphql_cache: bool = True
    public_url: str | None = None
    cors_origins: tuple[str, ...] = field(default_factory=tuple)
    auth_mode: AuthMode = AuthMode.TOKEN
    insecure_no_auth: bool = False
    max_query_cost: int = 20_000
    launch_rate_limit: int = 120
    rate_limit_window_seconds: float = 60.0
    # Host names (besides loopback ones) the server answers to: a guard against DNS rebinding.
    allowed_hosts: tuple[str, ...] = field(default_factory=tuple)
    max_operations_per_socket: int = 25
    max_operations_per_token: int = 100
    # /metrics without a token on this port of `metrics_host` (loopback), besides the API's.
    metrics_port: int | None = None
    metrics_host: str = "127.0.0.1"
    fast_paths: bool = field(default_factory=fast_paths_from_env)
    """The one switch of the paths that exist only to be faster than the libraries' own (each
    reaches into a library's internals; each is checked against the library's own behaviour):
    the executor's plain fields and string lists, inputs built in one step, remembered names
    and extension hooks, the JSON body read, the GraphQL lane, joined socket writes, prepared
    statements and reused greenlets. Off (``BACKFILLER_FAST_PATHS=0``), every one of them
    takes the library's own path, with the same answers; CI runs the integration and security
    tiers so once."""

    def __post_init__(self) -> None:
        # Settings also come back from JSON (``web/workers.py``): the mode as its value.
        object.__setattr__(self, "auth_mode", AuthMode(self.auth_mode))

    @classmethod
    def from_env(cls, **overrides: object) -> Settings:
        env = os.environ
        base = cls(
            database_url=env.get("BACKFILLER_DATABASE_URL") or None,
            definitions=env.get("BACKFILLER_DEFINITIONS") or None,
            max_partitions_per_backfill=int(
                env.get("BACKFILLER_MAX_PARTITIONS_PER_BACKFILL", "5000000")
            ),
            public_url=env.get("BACKFILLER_PUBLIC_URL") or None,
            graphql_cache=env.get("BACKFILLER_GRAPHQL_CACHE", "1") not in ("0", "false", "no"),
        )
        given = {k: v for k, v in overrides.items() if v is not None}
        return replace(base, **given)  # type: ignore[arg-type]
