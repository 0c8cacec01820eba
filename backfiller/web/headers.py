"""Headers every HTTP answer carries: no framing, no content sniffing, and when to retry."""

from __future__ import annotations

import math

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from backfiller.config import Settings

ALWAYS = [
    # No page of this server may be framed (clickjacking of the UI and GraphiQL).
    (b"x-frame-options", b"DENY"),
    (b"content-security-policy", b"frame-ancestors 'none'"),
    (b"x-content-type-options", b"nosniff"),
    (b"referrer-policy", b"no-referrer"),
]


class SecurityHeaders:
    """Adds :data:`ALWAYS` to every response, and ``Retry-After`` to a 429 without one."""

    def __init__(self, app: ASGIApp, settings: Settings) -> None:
        self.app = app
        self.retry_after = str(max(1, math.ceil(settings.rate_limit_window_seconds))).encode()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        async def send_with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = list(message.get("headers", []))
                present = {name.lower() for name, _ in headers}
                headers += [(n, v) for n, v in ALWAYS if n not in present]
                if message["status"] == 429 and b"retry-after" not in present:
                    headers.append((b"retry-after", self.retry_after))
                message = {**message, "headers": headers}
            await send(message)

        await self.app(scope, receive, send_with_headers)
