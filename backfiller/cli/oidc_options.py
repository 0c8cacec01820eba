"""The options of ``serve`` for single sign-on with OpenID Connect (``web/oidc.py``)."""

from __future__ import annotations

from typing import Annotated, Any

import typer

PANEL = "Single sign-on (OpenID Connect)"

OidcIssuerOption = Annotated[
    str | None,
    typer.Option(
        "--oidc-issuer",
        envvar="BACKFILLER_OIDC_ISSUER",
        rich_help_panel=PANEL,
        help="The identity provider's issuer URL: the UI signs people in with it "
        "(authorization code with PKCE). API tokens keep working beside it.",
    ),
]
OidcClientIdOption = Annotated[
    str | None,
    typer.Option(
        "--oidc-client-id",
        envvar="BACKFILLER_OIDC_CLIENT_ID",
        rich_help_panel=PANEL,
        help="This server's client id at the provider (redirect URI: <public URL>/auth/callback).",
    ),
]
OidcSecretFileOption = Annotated[
    str | None,
    typer.Option(
        "--oidc-client-secret-file",
        envvar="BACKFILLER_OIDC_CLIENT_SECRET_FILE",
        rich_help_panel=PANEL,
        help="A file holding the client secret (or set BACKFILLER_OIDC_CLIENT_SECRET); "
        "none for a public client.",
    ),
]
OidcScopesOption = Annotated[
    str,
    typer.Option(
        "--oidc-scopes",
        envvar="BACKFILLER_OIDC_SCOPES",
        rich_help_panel=PANEL,
        help="The scopes asked for, space-separated (must include openid).",
    ),
]
OidcRoleClaimOption = Annotated[
    str,
    typer.Option(
        "--oidc-role-claim",
        envvar="BACKFILLER_OIDC_ROLE_CLAIM",
        rich_help_panel=PANEL,
        help="The claim (groups or roles) whose values --oidc-role maps to roles.",
    ),
]
OidcRoleOption = Annotated[
    list[str] | None,
    typer.Option(
        "--oidc-role",
        rich_help_panel=PANEL,
        help="role=claim-value, e.g. admin=backfiller-admins; repeat. A person gets the "
        "highest role any of their claim values maps to.",
    ),
]
OidcDefaultRoleOption = Annotated[
    str | None,
    typer.Option(
        "--oidc-default-role",
        envvar="BACKFILLER_OIDC_DEFAULT_ROLE",
        rich_help_panel=PANEL,
        help="The role of a person no --oidc-role maps (default: none, refused).",
    ),
]
OidcTeamClaimOption = Annotated[
    str | None,
    typer.Option(
        "--oidc-team-claim",
        envvar="BACKFILLER_OIDC_TEAM_CLAIM",
        rich_help_panel=PANEL,
        help="A claim naming the person's team.",
    ),
]
OidcScopeClaimOption = Annotated[
    str | None,
    typer.Option(
        "--oidc-scope-claim",
        envvar="BACKFILLER_OIDC_SCOPE_CLAIM",
        rich_help_panel=PANEL,
        help="A claim listing the jobs and assets the person may launch and steer (as a "
        "token's scopes); without the claim, every one.",
    ),
]
OidcSessionHoursOption = Annotated[
    float,
    typer.Option(
        "--oidc-session-hours",
        envvar="BACKFILLER_OIDC_SESSION_HOURS",
        rich_help_panel=PANEL,
        help="How long a sign-in lasts.",
    ),
]


def oidc_settings(
    issuer: str | None,
    client_id: str | None,
    secret_file: str | None,
    scopes: str,
    role_claim: str,
    roles: list[str] | None,
    default_role: str | None,
    team_claim: str | None,
    scope_claim: str | None,
    session_hours: float,
) -> dict[str, Any]:
    """The ``Settings`` fields of these options."""
    return {
        "oidc_issuer": issuer,
        "oidc_client_id": client_id,
        "oidc_client_secret_file": secret_file,
        "oidc_scopes": scopes,
        "oidc_role_claim": role_claim,
        "oidc_roles": tuple(roles) if roles else None,
        "oidc_default_role": default_role,
        "oidc_team_claim": team_claim,
        "oidc_scope_claim": scope_claim,
        "oidc_session_hours": session_hours,
    }
