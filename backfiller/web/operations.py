"""The operator's endpoints around the application: ``/metrics``, ``/readyz``, HTTP metrics.

:class:`Operations` wraps the whole ASGI application (outside the access gate): it times every
HTTP request by route, and answers two paths itself:

- ``/metrics``: Prometheus' text format. Restricted: an admin token (``Authorization: Bearer``)
  under ``--auth token``, open under ``--auth none`` (which is loopback-only). Operators that
  would rather not hand Prometheus an admin token serve it on ``--metrics-port`` instead,
  bound to loopback (:func:`serve_metrics_port`).
- ``/readyz``: 200 when the database answers, is at the migration head and the definitions
  are loaded; 503 with the failing checks otherwise. ``/healthz`` (alive) stays in the app.
"""

from __future__ import annotations

import logging
import time
from typing import Any

from starlette.datastructures import Headers
from starlette.responses import JSONResponse, Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from backfiller.observability import api_metrics, exposition, health, tracing
from backfiller.resolvers.context import Services

access_logger = logging.getLogger("backfiller.access")


class Operations:
    def __init__(self, app: ASGIApp, services: Services) -> None:
        self.app = app
        self.services = services

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        path: str = scope["path"]
        if path == "/metrics":
            await self._metrics(scope, receive, send)
            return
        if path == "/readyz":
            await self._ready(scope, receive, send)
            return
        route = api_metrics.route_of(path)
        began = time.perf_counter()
        status = 500

        async def send_status(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = int(message["status"])
            await send(message)

        api_metrics.HTTP_IN_PROGRESS.inc()
        try:
            if tracing.enabled():
                await self._traced(scope, receive, send_status, route)
            else:
                await self.app(scope, receive, send_status)
        finally:
            api_metrics.HTTP_IN_PROGRESS.dec()
            seconds = time.perf_counter() - began
            api_metrics.observe_http(route, scope["method"], status, seconds)
            _access_log(scope, status, seconds)

    async def _traced(self, scope: Scope, receive: Receive, send: Send, route: str) -> None:
        """The request's span, continuing the caller's ``traceparent``."""
        carrier = {
            k: v for k, v in Headers(scope=scope).items() if k in ("traceparent", "tracestate")
        }
        attributes = {"http.request.method": scope["method"], "http.route": route}
        with tracing.span(f"HTTP {scope['method']} {route}", attributes, carrier, server=True):
            await self.app(scope, receive, send)

    async def _metrics(self, scope: Scope, receive: Receive, send: Send) -> None:
        refusal = await self._refusal(Headers(scope=scope))
        if refusal is not None:
            await refusal(scope, receive, send)
            return
        body = exposition.render()
        await Response(body, media_type=exposition.CONTENT_TYPE)(scope, receive, send)

    async def _refusal(self, headers: Headers) -> Response | None:
        from backfiller.domain.roles import Role
        from backfiller.resolvers.auth import AuthFailure, authenticate
        from backfiller.web.auth import bearer_token

        if self.services.settings.auth_mode == "none":
            return None
        token = bearer_token(headers)
        if not token:
            return _error(401, "UNAUTHENTICATED", "an admin token is required")
        found = await authenticate(self.services, token, self.services.clock())
        if isinstance(found, AuthFailure):
            return _error(401, "UNAUTHENTICATED", found.reason)
        if found.role is not Role.ADMIN:
            return _error(403, "FORBIDDEN", "/metrics needs the admin role")
        return None

    async def _ready(self, scope: Scope, receive: Receive, send: Send) -> None:
        checks = await health.database_checks(self.services.database)
        checks.append(health.definitions_check(self.services.definitions))
        status, body = health.as_json(checks)
        await JSONResponse(body, status_code=status)(scope, receive, send)


def _access_log(scope: Scope, status: int, seconds: float) -> None:
    """One line per request, with its id and actor (never its headers or body)."""
    if not access_logger.isEnabledFor(logging.INFO):
        return
    from backfiller.web.auth import principal_of

    state = scope.get("state") or {}
    principal = principal_of(scope)
    access_logger.info(
        "%s %s %d %.1f ms",
        scope["method"],
        scope["path"],
        status,
        seconds * 1000,
        extra={
            "request_id": state.get("request_id"),
            "actor": principal.name if principal is not None else None,
        },
    )


def _error(status: int, code: str, message: str) -> Response:
    headers = {"WWW-Authenticate": 'Bearer realm="backfiller"'} if status == 401 else None
    return JSONResponse(
        {"errors": [{"message": message, "extensions": {"code": code}}]}, status, headers
    )


def serve_metrics_port(port: int, host: str = "127.0.0.1") -> Any:
    """``/metrics`` without a token on its own port, in a thread (loopback by default)."""
    from backfiller.web.metrics_port import start_endpoint

    return start_endpoint(host, port, ready=None)
