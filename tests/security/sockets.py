"""A graphql-transport-ws client over a real WebSocket (the ``websockets`` package)."""

from __future__ import annotations

import json
from typing import Any

from websockets.exceptions import ConnectionClosed
from websockets.sync.client import ClientConnection, connect

from tests.support import LiveServer

PROTOCOL = ["graphql-transport-ws"]


class Socket:
    """graphql-transport-ws over a real WebSocket client."""

    def __init__(self, server: LiveServer, token: str | None, **headers: str) -> None:
        url = server.url.replace("http", "ws") + "/graphql/v1"
        self._connection = connect(
            url,
            subprotocols=PROTOCOL,  # type: ignore[arg-type]
            additional_headers=headers or None,
            max_size=None,
            # No keepalive: its pings draw from the global `random` in the client's thread,
            # which hypothesis reports (a flaky failure) when it happens during a draw.
            ping_interval=None,
        )
        self.ws: ClientConnection = self._connection.__enter__()
        payload = {"Authorization": f"Bearer {token}"} if token else {}
        self.ws.send(json.dumps({"type": "connection_init", "payload": payload}))
        assert json.loads(self.ws.recv(timeout=10))["type"] == "connection_ack"
        self.next_id = 0
        self.pending: dict[str, dict[str, Any]] = {}

    def send(self, query: str, variables: dict[str, Any] | None = None) -> str:
        self.next_id += 1
        op_id = str(self.next_id)
        payload = {"query": query, "variables": variables or {}}
        self.ws.send(json.dumps({"id": op_id, "type": "subscribe", "payload": payload}))
        return op_id

    def answer(self, op_id: str) -> dict[str, Any]:
        """The first ``next`` or ``error`` message of an operation."""
        while op_id not in self.pending:
            message = json.loads(self.ws.recv(timeout=20))
            if message["type"] in ("next", "error"):
                self.pending.setdefault(message["id"], message)
        return self.pending.pop(op_id)

    def ask(self, query: str, variables: dict[str, Any] | None = None) -> dict[str, Any]:
        return self.answer(self.send(query, variables))

    def close_code(self) -> int | None:
        """The code the server closed the socket with (waiting for it)."""
        try:
            while True:
                self.ws.recv(timeout=20)
        except ConnectionClosed as closed:
            return closed.rcvd.code if closed.rcvd else None

    def close(self) -> None:
        self._connection.__exit__(None, None, None)
