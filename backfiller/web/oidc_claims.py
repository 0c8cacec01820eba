"""Sign-in policy: the OpenID Connect settings of ``serve --oidc-...``, checked, and the
mapping of a provider's verified claims to what this server grants a person (a role, a team,
the jobs they may launch).

No network and no token handling here (that is the relying party, ``web/oidc.py``): the
command line checks the settings with this module alone, before the server starts.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from backfiller.config import Settings
from backfiller.domain.roles import Role


class SignInRefused(Exception):
    """A sign-in that cannot be accepted; the message is safe to show to the person."""


@dataclass(frozen=True, slots=True)
class OidcConfig:
    """What ``serve --oidc-...`` says (see ``from_settings``)."""

    issuer: str
    client_id: str
    client_secret: str | None
    scopes: str = "openid profile email"
    role_claim: str = "groups"
    roles: tuple[tuple[Role, str], ...] = ()
    """(role, claim value): a person whose ``role_claim`` holds the value gets the role."""
    default_role: Role | None = None
    team_claim: str | None = None
    scope_claim: str | None = None
    """A claim listing the jobs and assets the person may launch (none: every one)."""
    name_claims: tuple[str, ...] = ("email", "preferred_username", "name", "sub")
    session_seconds: int = 8 * 3600


@dataclass(frozen=True, slots=True)
class Identity:
    """A person as the provider vouched for them, mapped to what this server grants."""

    issuer: str
    subject: str
    name: str
    role: Role
    team: str | None
    jobs: list[str] | None


def claim_values(claims: Mapping[str, Any], name: str) -> list[str]:
    """A claim as a list of strings: a string, a list of strings, or a space-separated
    ``scope``-like string when the claim is named ``scope``."""
    value = claims.get(name)
    if isinstance(value, str):
        return value.split() if name == "scope" else [value]
    if isinstance(value, list):
        return [v for v in value if isinstance(v, str)]
    return []


def identity_of(config: OidcConfig, claims: Mapping[str, Any]) -> Identity:
    """The person of verified ``claims``: the highest role any of their claim values maps to
    (else the default role), their team, their scopes.

    Raises:
        SignInRefused: no role maps to them and there is no default role.
    """
    values = set(claim_values(claims, config.role_claim))
    granted = [role for role, value in config.roles if value in values]
    role = max(granted, key=lambda r: r.rank) if granted else config.default_role
    name = next((str(claims[c]) for c in config.name_claims if claims.get(c)), "")
    if role is None:
        raise SignInRefused(
            f"{name or 'this account'} has no role on this server (claim "
            f"{config.role_claim!r}); ask an administrator"
        )
    team = None
    if config.team_claim is not None:
        teams = claim_values(claims, config.team_claim)
        team = teams[0] if teams else None
    jobs = None
    if config.scope_claim is not None and config.scope_claim in claims:
        jobs = sorted(set(claim_values(claims, config.scope_claim)))
    return Identity(
        issuer=str(claims["iss"]),
        subject=str(claims["sub"]),
        name=name[:200],
        role=role,
        team=team[:200] if team else None,
        jobs=jobs,
    )


def oidc_config(settings: Settings) -> OidcConfig | None:
    """The sign-in of ``settings``; None without ``oidc_issuer``.

    Raises:
        ValueError: an issuer without a client id, a bad role map or default role, or a
            client secret file that cannot be read.
    """
    if not settings.oidc_issuer:
        return None
    if not settings.oidc_client_id:
        raise ValueError("--oidc-issuer needs --oidc-client-id")
    if not settings.oidc_issuer.startswith(("https://", "http://127.0.0.1", "http://localhost")):
        raise ValueError("--oidc-issuer must be an https:// URL")
    secret = os.environ.get("BACKFILLER_OIDC_CLIENT_SECRET") or None
    if settings.oidc_client_secret_file:
        try:
            secret = Path(settings.oidc_client_secret_file).read_text().strip()
        except OSError as error:
            raise ValueError(f"cannot read --oidc-client-secret-file: {error}") from None
    default = None
    if settings.oidc_default_role:
        try:
            default = Role(settings.oidc_default_role.lower())
        except ValueError:
            raise ValueError(
                f"unknown --oidc-default-role {settings.oidc_default_role!r}"
            ) from None
    if "openid" not in settings.oidc_scopes.split():
        raise ValueError("--oidc-scopes must include openid")
    return OidcConfig(
        issuer=settings.oidc_issuer,
        client_id=settings.oidc_client_id,
        client_secret=secret,
        scopes=settings.oidc_scopes,
        role_claim=settings.oidc_role_claim,
        roles=parse_role_map(settings.oidc_roles),
        default_role=default,
        team_claim=settings.oidc_team_claim or None,
        scope_claim=settings.oidc_scope_claim or None,
        session_seconds=max(60, int(settings.oidc_session_hours * 3600)),
    )


def parse_role_map(pairs: Sequence[str]) -> tuple[tuple[Role, str], ...]:
    """``role=claim-value`` pairs (``--oidc-role``), checked.

    Raises:
        ValueError: not ``role=value``, or an unknown role.
    """
    out = []
    for pair in pairs:
        role, sep, value = pair.partition("=")
        if not sep or not value:
            raise ValueError(f"--oidc-role takes role=claim-value, not {pair!r}")
        try:
            out.append((Role(role.strip().lower()), value.strip()))
        except ValueError:
            raise ValueError(f"unknown role {role!r} in --oidc-role {pair!r}") from None
    return tuple(out)


__all__ = [
    "Identity",
    "OidcConfig",
    "SignInRefused",
    "claim_values",
    "identity_of",
    "oidc_config",
    "parse_role_map",
]
