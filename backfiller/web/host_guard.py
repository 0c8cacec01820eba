"""The ``Host`` allow-list for the operator's paths that the application answers before its
access gate: ``/metrics`` and ``/readyz`` (``web/operations.py``).

The same list as every other path (``web/auth.py``): under ``--auth none`` (and ``dev``) only
loopback names, the bound address, ``BACKFILLER_PUBLIC_URL``'s host and ``--allowed-host``; a
page on a rebound DNS name gets 421 and never reads the exposition or the readiness checks.
"""

from __future__ import annotations

from starlette.datastructures import Headers
from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Receive, Scope, Send

from backfiller.config import Settings
from backfiller.web.auth import allowed_hosts, host_allowed

GUARDED_PATHS = frozenset({"/metrics", "/readyz"})


class HostGuard:
    """421 for ``/metrics`` and ``/readyz`` asked for under a host this server does not
    answer to; every other request passes (the access gate checks those)."""

    def __init__(self, app: ASGIApp, settings: Settings) -> None:
        self.app = app
        self.hosts = allowed_hosts(settings)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if (
            scope["type"] == "http"
            and scope["path"] in GUARDED_PATHS
            and not host_allowed(Headers(scope=scope).get("host"), self.hosts)
        ):
            body = {
                "errors": [
                    {"message": "host not allowed", "extensions": {"code": "MISDIRECTED_REQUEST"}}
                ]
            }
            await JSONResponse(body, status_code=421)(scope, receive, send)
            return
        await self.app(scope, receive, send)
