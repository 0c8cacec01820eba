"""The sign-in's pure parts: claims to a role, a team and scopes; the settings of --oidc-*;
and the settings surviving the trip to --workers processes."""

from __future__ import annotations

import base64
import dataclasses
import json
import time

import pytest
from joserfc import jwt
from joserfc.jwk import KeySet, RSAKey

from backfiller.config import Settings
from backfiller.domain.roles import Role
from backfiller.web.oidc import OidcProvider
from backfiller.web.oidc_claims import OidcConfig, SignInRefused, identity_of, oidc_config
from backfiller.web.workers import settings_from_environment, settings_to_environment

CONFIG = OidcConfig(
    issuer="https://id.example.com",
    client_id="backfiller",
    client_secret=None,
    roles=((Role.ADMIN, "admins"), (Role.OPERATOR, "data-eng"), (Role.VIEWER, "staff")),
    team_claim="team",
    scope_claim="jobs",
)
BASE = {"iss": "https://id.example.com", "sub": "u1", "email": "a@example.com"}


@pytest.mark.parametrize(
    ("groups", "role"),
    [
        (["staff"], Role.VIEWER),
        (["staff", "data-eng"], Role.OPERATOR),
        (["data-eng", "admins", "staff"], Role.ADMIN),
        ("data-eng", Role.OPERATOR),  # a string claim, not a list
    ],
)
def test_the_highest_mapped_role_wins(groups: object, role: Role) -> None:
    assert identity_of(CONFIG, {**BASE, "groups": groups}).role is role


def test_no_role_is_refused_unless_a_default_is_set() -> None:
    with pytest.raises(SignInRefused, match="no role"):
        identity_of(CONFIG, {**BASE, "groups": ["contractors"]})
    lenient = dataclasses.replace(CONFIG, default_role=Role.VIEWER)
    assert identity_of(lenient, {**BASE, "groups": ["contractors"]}).role is Role.VIEWER


def test_team_scopes_and_name() -> None:
    found = identity_of(
        CONFIG, {**BASE, "groups": ["staff"], "team": ["sales", "web"], "jobs": ["b", "a"]}
    )
    assert (found.name, found.team, found.jobs) == ("a@example.com", "sales", ["a", "b"])
    plain = identity_of(CONFIG, {"iss": BASE["iss"], "sub": "u2", "groups": "staff"})
    assert (plain.name, plain.team, plain.jobs) == ("u2", None, None)


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"oidc_issuer": "https://id.example.com"}, "needs --oidc-client-id"),
        ({"oidc_issuer": "http://id.example.com", "oidc_client_id": "c"}, "https"),
        ({"oidc_issuer": "https://i", "oidc_client_id": "c", "oidc_roles": ("boss=x",)}, "role"),
        ({"oidc_issuer": "https://i", "oidc_client_id": "c", "oidc_roles": ("admin",)}, "role="),
        ({"oidc_issuer": "https://i", "oidc_client_id": "c", "oidc_scopes": "email"}, "openid"),
    ],
)
def test_bad_settings_are_refused(fields: dict[str, object], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        oidc_config(Settings(**fields))  # type: ignore[arg-type]


def test_the_settings_reach_worker_processes_without_the_secret(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("BACKFILLER_OIDC_CLIENT_SECRET", "s3cret")
    settings = Settings(
        oidc_issuer="https://id.example.com",
        oidc_client_id="c",
        oidc_roles=("admin=admins", "viewer=staff"),
    )
    carried = settings_to_environment(settings)
    assert "s3cret" not in carried
    monkeypatch.setenv("BACKFILLER_SERVER_SETTINGS", carried)
    monkeypatch.setattr("backfiller.web.workers.SETTINGS_VARIABLE", "BACKFILLER_SERVER_SETTINGS")
    again = settings_from_environment()
    assert again == settings
    config = oidc_config(again)
    assert config is not None and config.client_secret == "s3cret"
    assert json.loads(carried)["oidc_roles"] == ["admin=admins", "viewer=staff"]


def signed(key: RSAKey, **claims: object) -> str:
    header = {"alg": "RS256", "kid": key.kid}
    return jwt.encode(header, claims, key)


@pytest.fixture
def provider() -> tuple[OidcProvider, RSAKey]:
    key = RSAKey.generate_key(2048, parameters={"kid": "k1"})
    found = OidcProvider(CONFIG)
    # The provider's metadata and keys as discovery would have cached them; its jwks_uri is a
    # port nothing listens on, so a key it does not hold cannot be fetched.
    found._metadata = {"issuer": CONFIG.issuer, "jwks_uri": "http://127.0.0.1:9/jwks"}
    found._metadata_at = time.monotonic()
    found._keys = KeySet([RSAKey.import_key(key.as_dict(private=False))])
    found._keys_at = time.monotonic()
    return found, key


NOW = 1_800_000_000
GOOD = {
    "iss": CONFIG.issuer,
    "aud": "backfiller",
    "sub": "u1",
    "exp": NOW + 300,
    "iat": NOW,
    "nonce": "n1",
}


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({}, None),
        ({"iss": "https://other.example.com"}, "iss"),
        ({"aud": "another-client"}, "aud"),
        ({"aud": ["backfiller", "another"], "azp": "another"}, "another client"),
        ({"exp": NOW - 120}, "exp"),
        ({"nonce": "n2"}, "nonce"),
    ],
)
async def test_id_token_checks(
    provider: tuple[OidcProvider, RSAKey], changes: dict[str, object], message: str | None
) -> None:
    found, key = provider
    token = signed(key, **{**GOOD, **changes})
    if message is None:
        assert (await found.verify_id_token(token, "n1", NOW))["sub"] == "u1"
        return
    with pytest.raises(SignInRefused, match=message):
        await found.verify_id_token(token, "n1", NOW)


async def test_a_token_signed_by_an_unknown_key_or_with_none_is_refused(
    provider: tuple[OidcProvider, RSAKey],
) -> None:
    found, _ = provider
    stranger = RSAKey.generate_key(2048, parameters={"kid": "k9"})
    with pytest.raises(SignInRefused, match="does not publish"):  # keys fetched just now
        await found.verify_id_token(signed(stranger, **GOOD), "n1", NOW)
    found._keys_at = 0  # older: an unknown key makes it fetch the keys again
    with pytest.raises(SignInRefused, match="cannot be reached"):
        await found.verify_id_token(signed(stranger, **GOOD), "n1", NOW)
    impostor = RSAKey.generate_key(2048, parameters={"kid": "k1"})  # a known kid, other key
    with pytest.raises(SignInRefused, match="not valid"):
        await found.verify_id_token(signed(impostor, **GOOD), "n1", NOW)
    unsigned = (
        ".".join(
            base64.urlsafe_b64encode(json.dumps(part).encode()).decode().rstrip("=")
            for part in ({"alg": "none", "kid": "k1"}, GOOD)
        )
        + "."
    )
    with pytest.raises(SignInRefused, match="not valid"):
        await found.verify_id_token(unsigned, "n1", NOW)
