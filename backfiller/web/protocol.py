"""uvicorn's HTTP/1.1 protocol with a deadline on what the client sends, and a cap on a head.

uvicorn never times out a client that sends its request's headers, or its body, a byte at a
time (its keep-alive timeout only runs between requests), so a few such clients hold every
connection the server can keep. Here a connection gets ``seconds`` to send each whole request
(headers and body), counted from when it opened or its previous answer ended; past that, while
still waiting for the client, the connection is closed. A request being answered, or a
connection upgraded to a WebSocket, is not affected. ``seconds`` is 30, or
``BACKFILLER_CLIENT_TIMEOUT`` (read at import, so that every worker process reads it).

The server parses HTTP with httptools (:class:`DeadlineHttpToolsProtocol`, C: about a third
less CPU per request than h11 here), which has no limit of its own on a request's head: a head
(request line and headers) over :data:`MAX_HEAD_BYTES` gets 400 and the connection is closed,
as h11 does past the same size. :class:`DeadlineH11Protocol` is the same on h11.
"""

from __future__ import annotations

import asyncio
import os
from typing import Any

from uvicorn.protocols.http.h11_impl import H11Protocol
from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

# h11's limit on an incomplete event (uvicorn's default), which bounds a request's head.
MAX_HEAD_BYTES = 16 * 1024
HEAD_TOO_LARGE = "Request head too large."


class _ClientDeadline:
    """The deadline, for either of uvicorn's HTTP/1.1 protocols (which provide the rest)."""

    client_timeout: float = float(os.environ.get("BACKFILLER_CLIENT_TIMEOUT") or 30.0)
    _deadline: asyncio.TimerHandle | None = None
    loop: asyncio.AbstractEventLoop
    transport: asyncio.Transport
    cycle: Any

    def connection_made(self, transport: Any) -> None:
        super().connection_made(transport)  # type: ignore[misc]
        self._arm()

    def on_response_complete(self) -> None:
        super().on_response_complete()  # type: ignore[misc]
        self._arm()

    def handle_websocket_upgrade(self, *event: Any) -> None:
        self._disarm()
        super().handle_websocket_upgrade(*event)  # type: ignore[misc]

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm()
        super().connection_lost(exc)  # type: ignore[misc]

    def _arm(self) -> None:
        self._disarm()
        self._deadline = self.loop.call_later(self.client_timeout, self._expired)

    def _disarm(self) -> None:
        if self._deadline is not None:
            self._deadline.cancel()
            self._deadline = None

    def _expired(self) -> None:
        self._deadline = None
        cycle = self.cycle
        waiting_for_client = (
            cycle is None
            or cycle.response_complete
            or (cycle.more_body and not cycle.response_started)
        )
        if not waiting_for_client:
            self._arm()  # the application is answering: check again later
        elif not self.transport.is_closing():
            self.transport.close()


class DeadlineH11Protocol(_ClientDeadline, H11Protocol):
    """h11 with the deadline (h11 bounds a head itself)."""


class DeadlineHttpToolsProtocol(_ClientDeadline, HttpToolsProtocol):
    """httptools with the deadline and the cap on a request's head."""

    # Bytes received since the current request began, until its head is parsed (None: in the
    # body, or answering). A head the parser has not finished is bounded by this count.
    _head_bytes: int | None = 0

    def data_received(self, data: bytes) -> None:
        if self._head_bytes is not None:
            self._head_bytes += len(data)
        super().data_received(data)
        head = self._head_bytes
        if head is not None and head > MAX_HEAD_BYTES and not self.transport.is_closing():
            self.send_400_response(HEAD_TOO_LARGE)

    def on_headers_complete(self) -> None:
        self._head_bytes = None
        size = len(self.url) + sum(len(n) + len(v) + 4 for n, v in self.headers)
        if size > MAX_HEAD_BYTES:
            # Raised inside the parser's callback: httptools stops parsing, and uvicorn answers
            # 400 and closes the connection, before any application sees the request.
            raise ValueError(HEAD_TOO_LARGE)
        super().on_headers_complete()

    def on_response_complete(self) -> None:
        super().on_response_complete()
        self._head_bytes = 0


__all__ = ["MAX_HEAD_BYTES", "DeadlineH11Protocol", "DeadlineHttpToolsProtocol"]
