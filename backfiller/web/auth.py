"""The gate in front of the API: who is asking, and whether a browser may ask at all.

- Authentication: under ``--auth token`` every request to the API (``/graphql...``,
  ``/api/...``) needs ``Authorization: Bearer <token>``; without one, or with a revoked,
  expired or unknown one, the answer is **401** with ``WWW-Authenticate: Bearer`` and a JSON
  body whose code is ``UNAUTHENTICATED`` (the UI shows its sign-in page on it). Under
  ``--auth none`` (loopback only) every request acts as an admin without a name.
  WebSocket clients that cannot set headers (browsers) send the token in the
  ``connection_init`` payload as ``{"Authorization": "Bearer <token>"}``.
- DNS rebinding: every request (but ``/healthz``) must name an allowed host in ``Host``:
  a loopback name (``localhost``, ``127.0.0.1``, ``[::1]``), the address the server binds, the
  host of ``BACKFILLER_PUBLIC_URL`` or one of ``--allowed-host``. Under ``--auth none`` that
  list is all there is; under ``--auth token`` without ``--allowed-host`` any host is answered
  (a rebound page has no token to send).
- CSRF: a request that a browser sends (it carries ``Origin``) must come from one of
  ``--cors-origin`` or from the origin of an allowed host (never merely the one its ``Host``
  header names); and an unsafe one (POST, ...) must have
  ``Content-Type: application/json``, a header a page on another origin can only send after a
  CORS preflight, which only configured origins pass. Mutations are never accepted over GET.
- CORS headers are sent for the configured origins only.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qs, urlsplit

from starlette.datastructures import Headers
from starlette.middleware.cors import CORSMiddleware
from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Receive, Scope, Send
from strawberry.exceptions import ConnectionRejectionError

from backfiller.config import AuthMode, Settings
from backfiller.resolvers.access import ANONYMOUS_ADMIN, Principal, actor_of
from backfiller.resolvers.authentication import AuthFailure, authenticate
from backfiller.resolvers.context import Context, Services

if TYPE_CHECKING:
    from backfiller.web.sessions import SignOn

logger = logging.getLogger("backfiller.auth")

API_PREFIXES = ("/graphql", "/api/")
SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})
PRINCIPAL_KEY = "principal"


def is_api_path(path: str) -> bool:
    return path.startswith(API_PREFIXES)


def bearer_token(headers: Headers | dict[str, Any]) -> str | None:
    """The token of an ``Authorization: Bearer <token>`` value; None when absent."""
    value = headers.get("authorization") or headers.get("Authorization")
    if not isinstance(value, str):
        return None
    scheme, _, token = value.strip().partition(" ")
    if scheme.lower() != "bearer":
        return ""
    return token.strip()


def principal_of(scope: Scope) -> Principal | None:
    """The principal the gate found for this request (None when it let it in without one)."""
    found = scope.get("state", {}).get(PRINCIPAL_KEY)
    return found if isinstance(found, Principal) else None


def request_context(services: Services, scope: Scope, request_id: str) -> Context:
    """The per-request context of an API request that passed the gate (GraphQL and REST)."""
    from backfiller.resolvers.source import StorageSource

    principal = principal_of(scope)
    return Context(
        services=services,
        source=StorageSource(services),
        actor=actor_of(principal),
        request_id=request_id,
        principal=principal,
        token=bearer_token(Headers(scope=scope)) if principal is not None else None,
        client=(scope.get("client") or (None,))[0],
    )


async def accept_websocket(context: Context) -> None:
    """Authenticate a WebSocket from its ``connection_init`` payload when no header did.

    A token in the payload is checked even under ``--auth none`` (as one in a header is).

    Raises:
        ConnectionRejectionError: no valid token (the socket closes with 4403).
    """
    if context.token:
        return  # authenticated by its Authorization header, at the gate
    params = context.connection_params or {}
    token = bearer_token(params) if isinstance(params, dict) else None
    if not token:
        if context.principal is ANONYMOUS_ADMIN:
            return  # --auth none
        if context.principal is not None and context.principal.session_id is not None:
            return  # signed in: the gate checked the session and its CSRF token
        raise ConnectionRejectionError({"code": "UNAUTHENTICATED"})
    services = context.services
    found = await authenticate(services, token, services.clock())
    if isinstance(found, AuthFailure):
        raise ConnectionRejectionError({"code": "UNAUTHENTICATED", "message": found.reason})
    context.principal = found
    context.actor = actor_of(found)
    # The caller's own token: what a trigger it presses acts with (never the server's).
    context.token = token


def host_name(value: str) -> str:
    """The host of a ``Host`` header or URL netloc, lowercased, without port or brackets."""
    value = value.strip().lower()
    if value.startswith("["):
        return value[1 : value.find("]")] if "]" in value else value
    return value.rsplit(":", 1)[0] if value.count(":") == 1 else value


def allowed_hosts(settings: Settings) -> frozenset[str] | None:
    """The host names this server answers to; None for any (token auth, none configured)."""
    names = {host_name(h) for h in settings.allowed_hosts}
    if settings.auth_mode is not AuthMode.NONE and not names:
        return None
    names |= {"localhost", "127.0.0.1", "::1"}
    if settings.host not in ("0.0.0.0", "::", ""):
        names.add(host_name(settings.host))
    if settings.public_url:
        names.add(host_name(urlsplit(settings.public_url).netloc))
    return frozenset(names)


def host_allowed(host: str | None, allowed: frozenset[str] | None) -> bool:
    if allowed is None:
        return True
    if not host:
        return False
    name = host_name(host)
    return name in allowed or (name.endswith(".localhost") and "localhost" in allowed)


def origin_allowed(
    origin: str, headers: Headers, cors: frozenset[str], hosts: frozenset[str] | None
) -> bool:
    """A configured origin, or this server's own: the ``Host`` it was asked for (http or
    https), provided that host is itself allowed."""
    if origin.rstrip("/") in cors:
        return True
    host = headers.get("host")
    parsed = urlsplit(origin)
    if not host or parsed.scheme not in ("http", "https"):
        return False
    return parsed.netloc.lower() == host.lower() and host_allowed(parsed.netloc, hosts)


def _unauthorized(path: str, message: str, token_given: bool) -> JSONResponse:
    challenge = 'Bearer realm="backfiller"'
    if token_given:
        challenge += ', error="invalid_token"'
    if path.startswith("/api/"):
        body: dict[str, Any] = {
            "userErrors": [{"code": "UNAUTHENTICATED", "message": message, "field": None}]
        }
    else:
        body = {"errors": [{"message": message, "extensions": {"code": "UNAUTHENTICATED"}}]}
    return JSONResponse(body, status_code=401, headers={"WWW-Authenticate": challenge})


def _refused(path: str, status: int, code: str, message: str) -> JSONResponse:
    if path.startswith("/api/"):
        body: dict[str, Any] = {"userErrors": [{"code": code, "message": message, "field": None}]}
    else:
        body = {"errors": [{"message": message, "extensions": {"code": code}}]}
    return JSONResponse(body, status_code=status)


class AccessGate:
    """ASGI middleware: authenticates API requests and refuses cross-site ones."""

    def __init__(self, app: ASGIApp, services: Services, sign_on: SignOn | None = None) -> None:
        self.app = app
        self.services = services
        self.sign_on = sign_on
        settings = services.settings
        self.auth_mode = settings.auth_mode
        self.origins = frozenset(o.rstrip("/") for o in settings.cors_origins)
        self.hosts = allowed_hosts(settings)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] not in ("http", "websocket") or scope["path"] == "/healthz":
            await self.app(scope, receive, send)
            return
        headers = Headers(scope=scope)
        if not host_allowed(headers.get("host"), self.hosts):
            logger.info("refused a request for host %r", headers.get("host"))
            await self._deny(scope, receive, send, 421, "MISDIRECTED_REQUEST", "host not allowed")
            return
        if not is_api_path(scope["path"]):
            await self.app(scope, receive, send)
            return
        path: str = scope["path"]
        origin = headers.get("origin")
        # A browser sends its page's origin (http or https), for a WebSocket too.
        if origin is not None and not origin_allowed(origin, headers, self.origins, self.hosts):
            await self._deny(scope, receive, send, 403, "FORBIDDEN", "origin not allowed")
            return
        if scope["type"] == "http":
            method = scope["method"]
            if method == "OPTIONS":
                await self.app(scope, receive, send)
                return
            if origin is not None and method not in SAFE_METHODS:
                media = headers.get("content-type", "").split(";", 1)[0].strip().lower()
                if media != "application/json":
                    await self._deny(
                        scope,
                        receive,
                        send,
                        415,
                        "UNSUPPORTED_MEDIA_TYPE",
                        "requests from a browser must send Content-Type: application/json",
                    )
                    return
        token = bearer_token(headers)
        principal: Principal | None = None
        found = await self._credential(scope, headers, token)
        if isinstance(found, AuthFailure):
            logger.info("refused a request to %s: %s", path, found.reason)
            await self._challenge(scope, receive, send, found.reason, True)
            return
        if found is not None:
            principal = found
        elif self.auth_mode is AuthMode.NONE:
            principal = ANONYMOUS_ADMIN
        elif scope["type"] == "http" and not self._is_ide_page(scope, headers):
            await self._challenge(
                scope,
                receive,
                send,
                "a token is required: send `Authorization: Bearer <token>` "
                "(create one with `backfiller token create`)",
                False,
            )
            return
        scope.setdefault("state", {})[PRINCIPAL_KEY] = principal
        await self.app(scope, receive, send)

    async def _credential(
        self, scope: Scope, headers: Headers, token: str | None
    ) -> Principal | AuthFailure | None:
        """The caller of a bearer token, else of a single sign-on session's cookie
        (``web/sessions.py``); None when the request has neither."""
        if token is not None:
            return await authenticate(self.services, token, self.services.clock())
        return None if self.sign_on is None else await self.sign_on.principal(scope, headers)

    @staticmethod
    def _is_ide_page(scope: Scope, headers: Headers) -> bool:
        """GraphiQL's page itself (no operation in it) loads without a token."""
        if scope["method"] != "GET" or not scope["path"].startswith("/graphql"):
            return False
        query = parse_qs(scope.get("query_string", b"").decode("latin-1"))
        return "query" not in query and "text/html" in headers.get("accept", "")

    async def _challenge(
        self, scope: Scope, receive: Receive, send: Send, message: str, token_given: bool
    ) -> None:
        if scope["type"] == "websocket":
            await send({"type": "websocket.close", "code": 4401, "reason": "Unauthorized"})
            return
        await _unauthorized(scope["path"], message, token_given)(scope, receive, send)

    @staticmethod
    async def _deny(
        scope: Scope, receive: Receive, send: Send, status: int, code: str, message: str
    ) -> None:
        if scope["type"] == "websocket":
            await send({"type": "websocket.close", "code": 4403, "reason": "Forbidden"})
            return
        await _refused(scope["path"], status, code, message)(scope, receive, send)


def secure(app: ASGIApp, services: Services, sign_on: SignOn | None = None) -> ASGIApp:
    """The gate, and CORS headers for the configured origins only (none by default)."""
    gated: ASGIApp = AccessGate(app, services, sign_on)
    origins = list(services.settings.cors_origins)
    if origins:
        gated = CORSMiddleware(
            gated,
            allow_origins=origins,
            allow_methods=["GET", "POST", "OPTIONS"],
            allow_headers=["Authorization", "Content-Type"],
            expose_headers=["X-Request-ID"],
            max_age=600,
        )
    return gated
