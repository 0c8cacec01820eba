"""uvicorn's HTTP/1.1 protocol with a deadline on what the client sends.

uvicorn never times out a client that sends its request's headers, or its body, a byte at a
time (its keep-alive timeout only runs between requests), so a few such clients hold every
connection the server can keep. Here a connection gets ``seconds`` to send each whole request
(headers and body), counted from when it opened or its previous answer ended; past that, while
still waiting for the client, the connection is closed. A request being answered, or a
connection upgraded to a WebSocket, is not affected. ``seconds`` is 30, or
``BACKFILLER_CLIENT_TIMEOUT`` (read at import, so that every worker process reads it).

The server parses HTTP with httptools (llhttp, in C; uvicorn's ``standard`` extra), which
costs a fraction of the pure-Python h11 per request; :data:`PROTOCOL` falls back to h11 where
httptools is not installed. h11 holds at most 16 KiB of an unfinished request head; httptools
holds whatever arrives, so the same bound is kept here: a head still unfinished past
``MAX_HEAD_BYTES`` is answered 400 and the connection closed.
"""

from __future__ import annotations

import asyncio
import os
from typing import Any

CLIENT_TIMEOUT = float(os.environ.get("BACKFILLER_CLIENT_TIMEOUT") or 30.0)
MAX_HEAD_BYTES = 16 * 1024
"""What a request's head (request line and headers) may take, as h11's own bound."""


class _ClientDeadline:
    """The deadline, for either of uvicorn's HTTP/1.1 protocols (mixed in before it)."""

    client_timeout: float = CLIENT_TIMEOUT
    _deadline: asyncio.TimerHandle | None = None
    loop: asyncio.AbstractEventLoop
    cycle: Any
    transport: asyncio.Transport

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        super().connection_made(transport)  # type: ignore[misc]
        self._arm()

    def on_response_complete(self) -> None:
        super().on_response_complete()  # type: ignore[misc]
        self._arm()

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


try:
    from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol
except ImportError:  # pragma: no cover (httptools comes with uvicorn[standard])
    from uvicorn.protocols.http.h11_impl import H11Protocol

    class DeadlineH11Protocol(_ClientDeadline, H11Protocol):
        def handle_websocket_upgrade(self, event: Any) -> None:
            self._disarm()
            super().handle_websocket_upgrade(event)

    PROTOCOL = "backfiller.web.protocol:DeadlineH11Protocol"
else:

    class DeadlineHttpToolsProtocol(_ClientDeadline, HttpToolsProtocol):
        _in_head = False
        _head_bytes = 0

        def handle_websocket_upgrade(self) -> None:
            self._disarm()
            super().handle_websocket_upgrade()

        def on_message_begin(self) -> None:
            super().on_message_begin()
            self._in_head, self._head_bytes = True, 0

        def on_headers_complete(self) -> None:
            self._in_head = False
            super().on_headers_complete()

        def data_received(self, data: bytes) -> None:
            super().data_received(data)
            if self._in_head and not self.transport.is_closing():
                # Counted after parsing (only then is it known where the head ended): what
                # is held stays under the bound plus one read.
                self._head_bytes += len(data)
                if self._head_bytes > MAX_HEAD_BYTES:
                    self.send_400_response("Request head too large.")

    PROTOCOL = "backfiller.web.protocol:DeadlineHttpToolsProtocol"
