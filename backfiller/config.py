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
    and extension hooks, the JSON body read, prepared statements (SQLite) and reused
    greenlets. Off (``BACKFILLER_FAST_PATHS=0``), every one of them
    takes the library's own path, with the same answers; CI runs the integration and security
    tiers so once."""

    # Single sign-on with OpenID Connect for the UI (web/oidc.py, web/sessions.py); off
    # without an issuer. The client secret is read from BACKFILLER_OIDC_CLIENT_SECRET or
    # from this file, in the server process: it never travels in the settings.
    oidc_issuer: str | None = None
    oidc_client_id: str | None = None
    oidc_client_secret_file: str | None = None
    oidc_scopes: str = "openid profile email"
    oidc_role_claim: str = "groups"
    oidc_roles: tuple[str, ...] = ()
    oidc_default_role: str | None = None
    oidc_team_claim: str | None = None
    oidc_scope_claim: str | None = None
    oidc_session_hours: float = 8.0

    def __post_init__(self) -> None:
        # Settings also come back from JSON (``web/workers.py``): the mode as its value.
        object.__setattr__(self, "auth_mode", AuthMode(self.auth_mode))
        object.__setattr__(self, "oidc_roles", tuple(self.oidc_roles))

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


def _days(name: str, default: float | None) -> float | None:
    """A number of days from the environment; ``forever`` (or empty) for None."""
    raw = os.environ.get(name)
    if raw is None:
        return default
    if raw.strip().lower() in ("", "forever", "none"):
        return None
    days = float(raw)
    if days <= 0:
        raise ValueError(f"{name} must be a positive number of days or 'forever', not {raw!r}")
    return days


@dataclass(frozen=True, slots=True)
class HistorySettings:
    """How long history is kept, where pruned rows are archived and where run logs live.

    Applied by every daemon (``daemon/retention.py``) and by ``backfiller db prune``. Each
    kind of history on its own; None keeps it forever.
    """

    backfill_days: float | None = 90.0
    """Finished backfills with their runs, log lines, slots, events and notifications."""
    trigger_evaluation_days: float | None = 30.0
    """Trigger evaluations (each trigger's newest is always kept)."""
    audit_days: float | None = None
    """Audit entries: kept forever unless set."""
    archive_url: str | None = None
    """Write pruned rows here first (JSON Lines; a folder or an fsspec URL)."""
    batch_rows: int = 1000
    """Rows a pruning transaction deletes at most."""
    log_store: str = "database"
    """``database``, or a folder or fsspec URL where run log lines are kept instead."""

    @classmethod
    def from_env(cls, **overrides: object) -> HistorySettings:
        env, default = os.environ, cls()
        base = cls(
            backfill_days=_days("BACKFILLER_KEEP_BACKFILLS_DAYS", default.backfill_days),
            trigger_evaluation_days=_days(
                "BACKFILLER_KEEP_TRIGGER_EVALUATIONS_DAYS", default.trigger_evaluation_days
            ),
            audit_days=_days("BACKFILLER_KEEP_AUDIT_DAYS", default.audit_days),
            archive_url=env.get("BACKFILLER_ARCHIVE_URL") or None,
            batch_rows=int(env.get("BACKFILLER_PRUNE_BATCH_ROWS", str(default.batch_rows))),
            log_store=log_store_from_env(),
        )
        return replace(base, **overrides)  # type: ignore[arg-type]


def log_store_from_env() -> str:
    """``BACKFILLER_LOG_STORE``: ``database`` (the default), or where run log lines go."""
    return os.environ.get("BACKFILLER_LOG_STORE") or "database"
