"""Single sign-on for the browser: the sign-in routes and the cookie session they open.

- ``GET /auth/login?next=#/...``: a new sign-in: a random ``state``, ``nonce`` and PKCE
  verifier kept server side (``oidc_logins``), a ``__Host-backfiller-login`` cookie that binds
  them to this browser, and a redirect to the provider's authorization endpoint.
- ``GET /auth/callback``: the provider's answer. The ``state`` must name a sign-in begun in
  this browser (its cookie) less than ``LOGIN_SECONDS`` ago, used once; the answer's ``iss``
  (RFC 9207), when given, must be the issuer; the code is exchanged with its PKCE verifier;
  the ID token is checked (``web/oidc.py``) with this sign-in's nonce; the claims map to a
  role (else the sign-in is refused). Then a session (``web_sessions``) and its cookie
  ``__Host-backfiller-session``: ``Secure``, ``HttpOnly``, ``SameSite=Strict``, path ``/``.
  Any failure lands on the UI's sign-in page with the reason.
- ``GET /auth/session``: who is signed in, and the session's CSRF token, for the UI.
- ``POST /auth/logout``: ends the session (with its CSRF token), clears the cookie, and
  answers where to go to sign out at the provider too.

A request to the API that carries the session cookie and no bearer token is the session's
person (:meth:`SignOn.principal`, called by the gate in ``web/auth.py``). Cookies travel by
themselves, so such a request must prove it comes from the UI: an HTTP request sends the
session's CSRF token in ``X-CSRF-Token``, a WebSocket in its ``csrf`` query parameter; a page
of another site can read neither (``/auth/session`` sends no CORS headers), and the gate's
``Origin`` check applies as to every request.
"""

from __future__ import annotations

import hashlib
import hmac
import logging
import secrets
from dataclasses import dataclass
from datetime import timedelta
from http.cookies import SimpleCookie
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qs, quote

from starlette.datastructures import Headers
from starlette.requests import Request
from starlette.responses import JSONResponse, RedirectResponse, Response
from starlette.routing import BaseRoute, Route
from starlette.types import Scope

from backfiller.resolvers.access import Principal
from backfiller.resolvers.authentication import AuthFailure
from backfiller.resolvers.context import Services
from backfiller.storage.web_sessions import NewSession, WebSessionRepository
from backfiller.web.oidc_claims import OidcConfig, SignInRefused, identity_of, oidc_config

if TYPE_CHECKING:
    from backfiller.web.oidc import OidcProvider

logger = logging.getLogger("backfiller.auth")

SESSION_COOKIE = "__Host-backfiller-session"
LOGIN_COOKIE = "__Host-backfiller-login"
CSRF_HEADER = "x-csrf-token"
LOGIN_SECONDS = 600
FORGET_SESSIONS_AFTER = timedelta(days=1)
NO_STORE = {"Cache-Control": "no-store"}


def csrf_token(session_secret: str) -> str:
    """The CSRF token of a session: derived from its secret, so nothing more is stored."""
    return hmac.new(session_secret.encode(), b"backfiller-csrf", hashlib.sha256).hexdigest()


def cookie_of(headers: Headers, name: str) -> str | None:
    raw = headers.get("cookie")
    if not raw:
        return None
    jar: SimpleCookie = SimpleCookie()
    try:
        jar.load(raw)
    except Exception:
        return None
    morsel = jar.get(name)
    return morsel.value if morsel is not None and morsel.value else None


def safe_next(value: str | None) -> str:
    """Where to land after signing in: a page of the UI (``#/...``), nothing else."""
    if value and value.startswith("#/") and not value.startswith("#/signin"):
        return value[:1000]
    return "#/backfills"


@dataclass
class SignOn:
    """The sign-in of one server: its provider, routes and sessions."""

    services: Services
    config: OidcConfig
    provider: OidcProvider

    def routes(self) -> list[BaseRoute]:
        return [
            Route("/auth/login", self.login, methods=["GET"]),
            Route("/auth/callback", self.callback, methods=["GET"]),
            Route("/auth/session", self.session, methods=["GET"]),
            Route("/auth/logout", self.logout, methods=["POST"]),
        ]

    def redirect_uri(self, request: Request) -> str:
        public = self.services.settings.public_url
        base = public.rstrip("/") if public else f"{request.url.scheme}://{request.url.netloc}"
        return f"{base}/auth/callback"

    # -- the sign-in ---------------------------------------------------------------------

    async def login(self, request: Request) -> Response:
        state, nonce, browser = (secrets.token_urlsafe(32) for _ in range(3))
        verifier = secrets.token_urlsafe(64)
        now = self.services.clock()
        try:
            url = await self.provider.authorization_url(
                self.redirect_uri(request), state, nonce, verifier
            )
        except SignInRefused as refused:
            return self._back_to_signin(str(refused))
        async with self.services.database.write() as db:
            sessions = WebSessionRepository(db)
            await sessions.forget_logins_before(now - timedelta(seconds=LOGIN_SECONDS))
            await sessions.add_login(
                state, browser, nonce, verifier, safe_next(request.query_params.get("next")), now
            )
        response = RedirectResponse(url, status_code=302, headers=NO_STORE)
        response.set_cookie(
            LOGIN_COOKIE, browser, max_age=LOGIN_SECONDS, secure=True, httponly=True, samesite="lax"
        )
        return response

    async def callback(self, request: Request) -> Response:
        params = request.query_params
        try:
            secret, next_url, identity = await self._signed_in(request, params)
        except SignInRefused as refused:
            logger.info("refused a sign-in: %s", refused)
            response = self._back_to_signin(str(refused))
            response.delete_cookie(LOGIN_COOKIE, secure=True, httponly=True, samesite="lax")
            return response
        logger.info("%s signed in as %s", identity.name, identity.role.value)
        response = RedirectResponse("/" + next_url, status_code=302, headers=NO_STORE)
        response.delete_cookie(LOGIN_COOKIE, secure=True, httponly=True, samesite="lax")
        response.set_cookie(
            SESSION_COOKIE,
            secret,
            max_age=self.config.session_seconds,
            secure=True,
            httponly=True,
            samesite="strict",
        )
        return response

    async def _signed_in(self, request: Request, params: Any) -> tuple[str, str, Any]:
        """The new session's secret, where to land, and who signed in.

        Raises:
            SignInRefused: anything about the answer that is not as it must be.
        """
        if params.get("error"):
            detail = params.get("error_description") or params["error"]
            raise SignInRefused(f"the identity provider refused the sign-in: {detail}")
        state, code = params.get("state"), params.get("code")
        if not state or not code:
            raise SignInRefused("the sign-in answer has no state or no code")
        browser = cookie_of(request.headers, LOGIN_COOKIE)
        now = self.services.clock()
        async with self.services.database.write() as db:
            login = await WebSessionRepository(db).take_login(state)
        if login is None:
            raise SignInRefused("this sign-in is unknown or was already used: sign in again")
        if browser is None or not hmac.compare_digest(
            hashlib.sha256(browser.encode()).hexdigest(), login.browser_hash
        ):
            raise SignInRefused("this sign-in was begun in another browser: sign in again")
        if now - login.created_at > timedelta(seconds=LOGIN_SECONDS):
            raise SignInRefused("this sign-in took too long: sign in again")
        issuer = params.get("iss")
        if issuer is not None and issuer != self.config.issuer:
            raise SignInRefused(f"the sign-in answer came from another issuer ({issuer})")
        redirect_uri = self.redirect_uri(request)
        tokens = await self.provider.exchange(code, redirect_uri, login.code_verifier)
        claims = await self.provider.verify_id_token(
            str(tokens["id_token"]), login.nonce, now.timestamp()
        )
        if tokens.get("access_token"):
            userinfo = await self.provider.userinfo(str(tokens["access_token"]), claims["sub"])
            claims = {**userinfo, **claims}
        identity = identity_of(self.config, claims)
        secret = secrets.token_urlsafe(32)
        new = NewSession(
            issuer=identity.issuer,
            subject=identity.subject,
            name=identity.name or identity.subject,
            role=identity.role,
            team=identity.team,
            jobs=identity.jobs,
            id_token=str(tokens["id_token"]),
            expires_at=now + timedelta(seconds=self.config.session_seconds),
        )
        async with self.services.database.write() as db:
            sessions = WebSessionRepository(db)
            await sessions.forget_sessions_before(now - FORGET_SESSIONS_AFTER)
            await sessions.add_session(secret, new, now)
        return secret, login.next_url, identity

    @staticmethod
    def _back_to_signin(message: str) -> RedirectResponse:
        return RedirectResponse(
            f"/#/signin?error={quote(message[:300])}", status_code=302, headers=NO_STORE
        )

    # -- the session -----------------------------------------------------------------------

    async def session(self, request: Request) -> Response:
        secret = cookie_of(request.headers, SESSION_COOKIE)
        found = await self._find(secret) if secret else None
        body: dict[str, Any] = {"sso": True, "signedIn": False}
        if found is not None and secret is not None:
            body.update(
                signedIn=True,
                name=found.name,
                role=found.role.value,
                team=found.team,
                expiresAt=found.expires_at.isoformat(),
                csrfToken=csrf_token(secret),
            )
        return JSONResponse(body, headers=NO_STORE)

    async def logout(self, request: Request) -> Response:
        secret = cookie_of(request.headers, SESSION_COOKIE)
        found = await self._find(secret) if secret else None
        if found is None or secret is None:
            return JSONResponse({"next": "/#/signin"}, headers=NO_STORE)
        given = request.headers.get(CSRF_HEADER, "")
        if not hmac.compare_digest(given, csrf_token(secret)):
            return JSONResponse({"error": "the CSRF token is missing or wrong"}, status_code=403)
        async with self.services.database.write() as db:
            await WebSessionRepository(db).end_session(found.id, self.services.clock())
        base = self.redirect_uri(request).removesuffix("/auth/callback")
        try:
            provider_logout = await self.provider.end_session_url(found.id_token, f"{base}/")
        except SignInRefused:
            provider_logout = None
        response = JSONResponse(
            {"next": provider_logout or "/#/signin?signedOut=1"}, headers=NO_STORE
        )
        response.delete_cookie(SESSION_COOKIE, secure=True, httponly=True, samesite="strict")
        return response

    async def _find(self, secret: str) -> Any:
        async with self.services.database.read() as db:
            found = await WebSessionRepository(db).find_session(secret)
        now = self.services.clock()
        if found is None or found.ended_at is not None or found.expires_at <= now:
            return None
        return found

    # -- the gate's hook ---------------------------------------------------------------------

    async def principal(self, scope: Scope, headers: Headers) -> Principal | AuthFailure | None:
        """The person of a request's session cookie (None when it has none).

        An ended or expired session, or a request without the session's CSRF token, is an
        ``AuthFailure`` (the gate answers 401, the UI shows its sign-in page).
        """
        secret = cookie_of(headers, SESSION_COOKIE)
        if secret is None:
            return None
        found = await self._find(secret)
        if found is None:
            return AuthFailure("the session has ended or expired: sign in again")
        if scope["type"] == "websocket":
            query = parse_qs(scope.get("query_string", b"").decode("latin-1"))
            given = (query.get("csrf") or [""])[0]
        else:
            given = headers.get(CSRF_HEADER, "")
        if not hmac.compare_digest(given, csrf_token(secret)):
            return AuthFailure("a request with a session cookie must send the session's CSRF token")
        jobs = frozenset(str(j) for j in found.jobs) if found.jobs is not None else None
        return Principal(
            name=found.name, role=found.role, jobs=jobs, session_id=found.id, team=found.team
        )


def sign_on_of(services: Services) -> SignOn | None:
    """The sign-in of these settings; None when ``--oidc-issuer`` is not given."""
    config = oidc_config(services.settings)
    if config is None:
        return None
    # The relying party's libraries (httpx, authlib, joserfc) load only for a server that signs
    # users on: about 0.1 s of every other server's start.
    from backfiller.web.oidc import OidcProvider

    return SignOn(services, config, OidcProvider(config))


async def _no_sign_on(request: Request) -> Response:
    return JSONResponse({"sso": False, "signedIn": False}, headers=NO_STORE)


def no_sign_on_route() -> Route:
    """``/auth/session`` of a server without single sign-on: the UI asks for a token."""
    return Route("/auth/session", _no_sign_on, methods=["GET"])


__all__ = [
    "CSRF_HEADER",
    "SESSION_COOKIE",
    "SignOn",
    "csrf_token",
    "no_sign_on_route",
    "sign_on_of",
]
