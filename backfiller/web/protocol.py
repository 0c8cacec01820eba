"""uvicorn's HTTP/1.1 protocol with a deadline on what the client sends.

uvicorn never times out a client that sends its request's headers, or its body, a byte at a
time (its keep-alive timeout only runs between requests), so a few such clients hold every
connection the server can keep. Here a connection gets ``seconds`` to send each whole request
(headers and body), counted from when it opened or its previous answer ended; past that, while
still waiting for the client, the connection is closed. A request being answered, or a
connection upgraded to a WebSocket, is not affected. ``seconds`` is 30, or
``BACKFILLER_CLIENT_TIMEOUT`` (read at import, so that every worker process reads it). A
client that closes its sending side after a whole request (``shutdown(SHUT_WR)``) still gets
its answer: uvicorn closed such a connection at once, dropping the answer.

The server parses HTTP with httptools (llhttp, in C; uvicorn's ``standard`` extra), which
costs a fraction of the pure-Python h11 per request; :data:`PROTOCOL` falls back to h11 where
httptools is not installed. Two things h11 does that uvicorn's httptools protocol does not
are kept here:

- **A bounded head.** h11 holds at most 16 KiB of an unfinished request head; httptools holds
  whatever arrives. A head still unfinished past ``MAX_HEAD_BYTES`` is answered 400 and the
  connection closed.
- **The body of a request that offers an upgrade the server declines.** Java's default
  ``HttpClient`` offers every plain-HTTP request an upgrade to h2c, body included. llhttp
  treats what follows such a head as the new protocol's, so uvicorn handed the application an
  empty body. Here the offer is declined as HTTP/1.1 says a server may (the request is
  answered over HTTP/1.1), and the ``Content-Length`` bytes after the head are the request's
  body; the connection then goes on with the next request. Such a request with a chunked
  body is answered 400 (no client seen sends one).
"""

from __future__ import annotations

import asyncio
import os
from typing import Any

CLIENT_TIMEOUT = float(os.environ.get("BACKFILLER_CLIENT_TIMEOUT") or 30.0)
MAX_HEAD_BYTES = 16 * 1024
"""What a request's head (request line and headers) may take, as h11's own bound."""


class _ClientRules:
    """The deadline, and answers to half-closed clients, for either of uvicorn's HTTP/1.1
    protocols (mixed in before it)."""

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

    def eof_received(self) -> bool | None:
        """A client that closed its side after a whole request still gets the answer, then
        the connection closes; otherwise (no request, or one still missing part of its body,
        which will never come) the connection closes now, as uvicorn does."""
        cycle = self.cycle
        if cycle is None or cycle.response_complete or cycle.more_body:
            return None
        cycle.keep_alive = False
        return True

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
    import httptools
    from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol
except ImportError:  # pragma: no cover (httptools comes with uvicorn[standard])
    from uvicorn.protocols.http.h11_impl import H11Protocol

    class DeadlineH11Protocol(_ClientRules, H11Protocol):  # type: ignore[misc]
        def handle_websocket_upgrade(self, event: Any) -> None:
            self._disarm()
            super().handle_websocket_upgrade(event)

    PROTOCOL = "backfiller.web.protocol:DeadlineH11Protocol"
else:

    class DeadlineHttpToolsProtocol(_ClientRules, HttpToolsProtocol):  # type: ignore[misc]
        _in_head = False
        _head_bytes = 0
        _body_left = 0
        """Bytes still to come of a declined upgrade's body (see the module's docstring)."""
        _chunked_upgrade = False

        def handle_websocket_upgrade(self) -> None:
            self._disarm()
            super().handle_websocket_upgrade()

        def on_message_begin(self) -> None:
            super().on_message_begin()
            self._in_head, self._head_bytes, self._chunked_upgrade = True, 0, False

        def on_headers_complete(self) -> None:
            self._in_head = False
            super().on_headers_complete()

        def on_message_complete(self) -> None:
            if self.parser.should_upgrade() and not self._should_upgrade():
                # llhttp skipped the body of a declined upgrade: it is read in data_received.
                length, chunked = _body_framing(self.headers)
                if chunked:
                    self._chunked_upgrade = True
                    return
                if length:
                    self._body_left = length
                    return
            super().on_message_complete()

        def data_received(self, data: bytes) -> None:
            if self._body_left:
                data = self._declined_upgrade_body(data)
                if not data:
                    return
            self._unset_keepalive_if_required()
            try:
                self.parser.feed_data(data)
            except httptools.HttpParserError:
                self.logger.warning("Invalid HTTP request received.")
                self.send_400_response("Invalid HTTP request received.")
                return
            except httptools.HttpParserUpgrade as upgrade:
                if self._should_upgrade():
                    self.handle_websocket_upgrade()
                elif self._chunked_upgrade:
                    self.send_400_response("A request offering an upgrade needs a length.")
                else:
                    rest = self._declined_upgrade_body(data[upgrade.args[0] :])
                    if rest:
                        self.data_received(rest)  # the next request, sent right behind
                return
            if self._in_head and not self.transport.is_closing():
                # Counted after parsing (only then is it known where the head ended): what
                # is held stays under the bound plus one read.
                self._head_bytes += len(data)
                if self._head_bytes > MAX_HEAD_BYTES:
                    self.send_400_response("Request head too large.")

        def _declined_upgrade_body(self, data: bytes) -> bytes:
            """Hand the request the part of ``data`` that is its body; what follows it."""
            body, rest = data[: self._body_left], data[self._body_left :]
            self._body_left -= len(body)
            if body:
                self.on_body(body)
            if not self._body_left:
                HttpToolsProtocol.on_message_complete(self)
            return rest

    PROTOCOL = "backfiller.web.protocol:DeadlineHttpToolsProtocol"


def _body_framing(headers: list[tuple[bytes, bytes]]) -> tuple[int, bool]:
    """A request's declared body length, and whether its body is chunked instead."""
    length, chunked = 0, False
    for name, value in headers:
        if name == b"content-length" and value.strip().isdigit():
            length = int(value)
        elif name == b"transfer-encoding" and b"chunked" in value.lower():
            chunked = True
    return length, chunked
