"""uvicorn's HTTP/1.1 protocol with a deadline on what the client sends.

uvicorn never times out a client that sends its request's headers, or its body, a byte at a
time (its keep-alive timeout only runs between requests), so a few such clients hold every
connection the server can keep. Here a connection gets ``seconds`` to send each whole request
(headers and body), counted from when it opened or its previous answer ended; past that, while
still waiting for the client, the connection is closed. A request being answered, or a
connection upgraded to a WebSocket, is not affected. ``seconds`` is 30, or
``BACKFILLER_CLIENT_TIMEOUT`` (read at import, so that every worker process reads it).
"""

from __future__ import annotations

import asyncio
import os
from typing import Any

from uvicorn.protocols.http.h11_impl import H11Protocol


class DeadlineH11Protocol(H11Protocol):
    client_timeout: float = float(os.environ.get("BACKFILLER_CLIENT_TIMEOUT") or 30.0)
    _deadline: asyncio.TimerHandle | None = None

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._arm()

    def on_response_complete(self) -> None:
        super().on_response_complete()
        self._arm()

    def handle_websocket_upgrade(self, event: Any) -> None:
        self._disarm()
        super().handle_websocket_upgrade(event)

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm()
        super().connection_lost(exc)

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
