"""The relying party of OpenID Connect: discovery, the authorization request (code flow with
PKCE), the code exchange and the ID token's checks. What its claims grant is
``web/oidc_claims.py``.

Built on ``authlib`` (PKCE, the OAuth 2 request and response parameters) and ``joserfc`` (the
JSON Web Tokens and keys, authlib's own JOSE library). The provider's metadata comes from
``<issuer>/.well-known/openid-configuration`` and its keys from ``jwks_uri``; both are cached,
the keys fetched again when a token names a key they do not hold (key rotation), at most once
every ``KEYS_REFETCH_SECONDS``.

An ID token is accepted only when its signature verifies with one of the provider's keys (an
asymmetric algorithm, never ``none``), its ``iss`` is the configured issuer, its ``aud``
holds the client id (and ``azp`` is the client id when there are several audiences), it has
not expired (``exp``, with ``LEEWAY_SECONDS``), and its ``nonce`` is the one of this sign-in.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field
from typing import Any

import httpx
from authlib.oauth2.rfc6749.parameters import prepare_grant_uri, prepare_token_request
from authlib.oauth2.rfc7636 import create_s256_code_challenge
from joserfc import jwt
from joserfc.errors import InvalidKeyIdError, JoseError
from joserfc.jwk import KeySet

from backfiller.web.oidc_claims import OidcConfig, SignInRefused

logger = logging.getLogger("backfiller.oidc")

ALGORITHMS = (
    "RS256",
    "RS384",
    "RS512",
    "PS256",
    "PS384",
    "PS512",
    "ES256",
    "ES384",
    "ES512",
    "EdDSA",
)
LEEWAY_SECONDS = 60
METADATA_SECONDS = 3600
KEYS_REFETCH_SECONDS = 1
HTTP_TIMEOUT_SECONDS = 10


@dataclass
class OidcProvider:
    """One identity provider, its metadata and keys cached."""

    config: OidcConfig
    http: httpx.AsyncClient = field(
        default_factory=lambda: httpx.AsyncClient(timeout=HTTP_TIMEOUT_SECONDS)
    )
    _metadata: dict[str, Any] | None = None
    _metadata_at: float = 0.0
    _keys: KeySet | None = None
    _keys_at: float = 0.0

    async def metadata(self) -> dict[str, Any]:
        if self._metadata is None or time.monotonic() - self._metadata_at > METADATA_SECONDS:
            url = self.config.issuer.rstrip("/") + "/.well-known/openid-configuration"
            found = await self._get_json(url)
            if found.get("issuer") != self.config.issuer:
                raise SignInRefused(
                    f"the provider at {url} names itself {found.get('issuer')!r}, "
                    f"not {self.config.issuer!r}"
                )
            self._metadata, self._metadata_at = found, time.monotonic()
        return self._metadata

    async def keys(self, refresh: bool = False) -> KeySet:
        stale = time.monotonic() - self._keys_at > KEYS_REFETCH_SECONDS
        if self._keys is None or (refresh and stale):
            raw = await self._get_json(str((await self.metadata())["jwks_uri"]))
            self._keys, self._keys_at = KeySet.import_key_set(raw), time.monotonic()  # type: ignore[arg-type]
        return self._keys

    async def authorization_url(
        self, redirect_uri: str, state: str, nonce: str, code_verifier: str
    ) -> str:
        endpoint = str((await self.metadata())["authorization_endpoint"])
        return str(
            prepare_grant_uri(
                endpoint,
                self.config.client_id,
                "code",
                redirect_uri=redirect_uri,
                scope=self.config.scopes,
                state=state,
                nonce=nonce,
                code_challenge=create_s256_code_challenge(code_verifier),
                code_challenge_method="S256",
            )
        )

    async def exchange(self, code: str, redirect_uri: str, code_verifier: str) -> dict[str, Any]:
        """The provider's token response for an authorization code."""
        endpoint = str((await self.metadata())["token_endpoint"])
        body = prepare_token_request(
            "authorization_code",
            redirect_uri=redirect_uri,
            code=code,
            code_verifier=code_verifier,
            client_id=self.config.client_id,
        )
        headers = {
            "Content-Type": "application/x-www-form-urlencoded",
            "Accept": "application/json",
        }
        secret = self.config.client_secret
        auth = httpx.BasicAuth(self.config.client_id, secret) if secret is not None else None
        try:
            response = await self.http.post(
                endpoint, content=body, headers=headers, auth=auth or httpx.USE_CLIENT_DEFAULT
            )
        except httpx.HTTPError as error:
            raise SignInRefused(f"the identity provider cannot be reached: {error}") from None
        answer = _json_object(response)
        if response.status_code != 200 or "id_token" not in answer:
            reason = answer.get("error_description") or answer.get("error") or response.status_code
            raise SignInRefused(f"the identity provider refused the sign-in: {reason}")
        return answer

    async def verify_id_token(
        self, id_token: str, nonce: str, now: float | None = None
    ) -> dict[str, Any]:
        """The claims of a valid ID token for this sign-in (see the module's docstring).

        Raises:
            SignInRefused: a bad signature, issuer, audience, time or nonce.
        """
        token = await self._decoded(id_token)
        claims = dict(token.claims)
        registry = jwt.JWTClaimsRegistry(
            now=int(now if now is not None else time.time()),
            leeway=LEEWAY_SECONDS,
            iss={"essential": True, "value": self.config.issuer},
            aud={"essential": True, "value": self.config.client_id},
            sub={"essential": True},
            exp={"essential": True},
            nonce={"essential": True, "value": nonce},
        )
        try:
            registry.validate(claims)
        except JoseError as error:
            raise SignInRefused(
                f"the ID token is not valid: {error.description or error.error}"
            ) from None
        audiences = claims["aud"] if isinstance(claims["aud"], list) else [claims["aud"]]
        if len(audiences) > 1 and claims.get("azp") != self.config.client_id:
            raise SignInRefused("the ID token was issued to another client")
        return claims

    async def _decoded(self, id_token: str) -> jwt.Token:
        for refresh in (False, True):
            keys = await self.keys(refresh=refresh)
            try:
                return jwt.decode(id_token, keys, algorithms=list(ALGORITHMS))
            except InvalidKeyIdError:
                continue  # no key of that id: the provider may have rotated its keys
            except (JoseError, ValueError) as error:
                reason = error.error if isinstance(error, JoseError) else str(error)
                raise SignInRefused(f"the ID token is not valid: {reason}") from None
        raise SignInRefused("the ID token is signed with a key the provider does not publish")

    async def userinfo(self, access_token: str, subject: str) -> dict[str, Any]:
        """The userinfo claims of the same person (empty when the provider has no endpoint)."""
        endpoint = (await self.metadata()).get("userinfo_endpoint")
        if not endpoint:
            return {}
        try:
            response = await self.http.get(
                str(endpoint), headers={"Authorization": f"Bearer {access_token}"}
            )
        except httpx.HTTPError as error:
            raise SignInRefused(f"the identity provider cannot be reached: {error}") from None
        claims = _json_object(response)
        if response.status_code != 200 or claims.get("sub") != subject:
            raise SignInRefused("the identity provider's userinfo is not of this person")
        return claims

    async def end_session_url(self, id_token: str | None, after: str) -> str | None:
        """Where to send the browser to sign out at the provider too (RP-initiated logout)."""
        endpoint = (await self.metadata()).get("end_session_endpoint")
        if not endpoint:
            return None
        params = {"post_logout_redirect_uri": after, "client_id": self.config.client_id}
        if id_token:
            params["id_token_hint"] = id_token
        return str(httpx.URL(str(endpoint), params=params))

    async def _get_json(self, url: str) -> dict[str, Any]:
        try:
            response = await self.http.get(url)
        except httpx.HTTPError as error:
            raise SignInRefused(f"the identity provider cannot be reached: {error}") from None
        if response.status_code != 200:
            raise SignInRefused(f"{url} answered HTTP {response.status_code}")
        return _json_object(response)


def _json_object(response: httpx.Response) -> dict[str, Any]:
    try:
        value = response.json()
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


__all__ = ["OidcProvider"]
