"""GraphQL over WebSocket (graphql-transport-ws) with the guarantees of HTTP.

Strawberry runs every operation of a socket with the one context made when the socket opened.
Here, instead:

- every operation gets a context of its own (its own request id, audit draft and caches), so
  two mutations sent back to back never share an audit entry;
- the socket's token is checked again before every operation and every few seconds while the
  socket is open (a revoked or expired token closes it with 4401);
- a message is at most the HTTP body limit (larger ones close the socket with 1009, before
  they are parsed), and the operations in flight are capped per socket and per token;
- a ``subscribe`` that holds a number too long to convert is answered with an ``error``
  message (``INVALID_ARGUMENT``) and the socket stays open, as an HTTP request gets a 400.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections import Counter
from collections.abc import AsyncGenerator
from contextvars import ContextVar
from dataclasses import replace
from json import JSONDecodeError
from typing import Any

from graphql import GraphQLError
from starlette.websockets import WebSocket, WebSocketDisconnect, WebSocketState
from strawberry.asgi import ASGIWebSocketAdapter
from strawberry.http.async_base_view import AsyncBaseHTTPView
from strawberry.http.exceptions import NonJsonMessageReceived, NonTextMessageReceived
from strawberry.subscriptions.protocols.graphql_transport_ws.handlers import (
    BaseGraphQLTransportWSHandler,
)
from strawberry.subscriptions.protocols.graphql_transport_ws.types import (
    ConnectionInitMessage,
    ErrorMessage,
    Message,
    SubscribeMessage,
)

from backfiller.resolvers.authentication import AuthFailure, authenticate
from backfiller.resolvers.context import Context
from backfiller.resolvers.rate_keys import rate_caller
from backfiller.web.request_body import TOO_LARGE, decode_socket_message, number_too_large
from backfiller.web.request_ids import new_request_id

logger = logging.getLogger("backfiller.auth")

RECHECK_SECONDS = 2.0
"""How stale the socket's verdict on its token may be when an operation arrives."""
WATCH_SECONDS = 5.0
"""How often an open socket's token is checked while no operation arrives."""
TOKEN_DIED = 4401
TOO_BIG = 1009

_operation_context: ContextVar[Context | None] = ContextVar("operation_context", default=None)


class OperationCounter:
    """Operations in flight on the sockets of this process, per caller."""

    def __init__(self) -> None:
        self.counts: Counter[str] = Counter()

    def acquire(self, caller: str, limit: int) -> bool:
        if limit > 0 and self.counts[caller] >= limit:
            return False
        self.counts[caller] += 1
        return True

    def release(self, caller: str) -> None:
        self.counts[caller] -= 1
        if self.counts[caller] <= 0:
            del self.counts[caller]


def caller_key(context: Context) -> str:
    """Whose operations in flight these are: a token's, a run's, or a client address'."""
    return rate_caller(context.principal, context.client)


def operation_context(socket: Context) -> Context:
    """A fresh context for one operation of a socket: same caller, nothing else shared."""
    from backfiller.resolvers.source import StorageSource

    return replace(
        socket,
        source=StorageSource(socket.services),
        request_id=new_request_id(),
        extra={},
        audit=None,
    )


class CappedWebSocketAdapter(ASGIWebSocketAdapter):
    """Reads JSON messages, closing the socket on one larger than the HTTP body limit."""

    def __init__(
        self,
        view: AsyncBaseHTTPView[Any, Any, Any, Any, Any, Any, Any],
        request: WebSocket,
        response: WebSocket,
    ) -> None:
        super().__init__(view, request, response)
        self.limit: int = getattr(view, "max_message_bytes", 1024 * 1024)

    def _too_big(self, text: str) -> bool:
        # A character is 1 to 4 bytes in UTF-8: encode only when the length cannot tell.
        if len(text) > self.limit:
            return True
        return (
            len(text) * 4 > self.limit and len(text.encode("utf-8", "surrogatepass")) > self.limit
        )

    async def iter_json(
        self, *, ignore_parsing_errors: bool = False
    ) -> AsyncGenerator[object, None]:
        while self.ws.application_state != WebSocketState.DISCONNECTED:
            try:
                text = await self.ws.receive_text()
            except WebSocketDisconnect:
                return
            except KeyError as error:  # a binary message
                raise NonTextMessageReceived from error
            if self._too_big(text):
                await self.ws.close(TOO_BIG, f"message larger than {self.limit} bytes")
                return
            try:
                decoded = decode_socket_message(text)
            except JSONDecodeError as error:
                if ignore_parsing_errors:
                    continue
                raise NonJsonMessageReceived from error
            yield decoded


def _well_formed(message: object) -> bool:
    """A ``subscribe`` message whose parts have the protocol's types (else strawberry fails on
    it with an unexpected error rather than closing the socket with 4400)."""
    if not isinstance(message, dict) or not isinstance(message.get("id"), str):
        return False
    payload = message.get("payload")
    if not isinstance(payload, dict) or not isinstance(payload.get("query"), str):
        return False
    variables = payload.get("variables")
    name = payload.get("operationName")
    return (variables is None or isinstance(variables, dict)) and (
        name is None or isinstance(name, str)
    )


class GuardedTransportWSHandler(BaseGraphQLTransportWSHandler[Context, None]):
    """graphql-transport-ws with a context per operation and a token that is kept checked."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self._socket_context: Context | None = None
        super().__init__(*args, **kwargs)
        self.max_subscriptions_per_connection = None  # the socket's cap is checked here
        self._checked_at = time.monotonic()
        self._watcher: asyncio.Task[None] | None = None

    # Strawberry reads ``self.context`` when it starts an operation's task; the task sees the
    # operation's own context (a context variable set around its creation), anything else
    # the socket's.
    @property
    def context(self) -> Context:
        found = _operation_context.get()
        if found is not None:
            return found
        assert self._socket_context is not None
        return self._socket_context

    @context.setter
    def context(self, value: Context) -> None:
        self._socket_context = value

    @property
    def socket(self) -> Context:
        assert self._socket_context is not None
        return self._socket_context

    async def handle_message(self, message: Message) -> None:
        if not isinstance(message, dict) or not isinstance(message.get("type"), str):
            await self.handle_invalid_message("a message is a JSON object with a type")
            return
        if TOO_LARGE in message:
            await self._refuse_too_large(message)
            return
        await super().handle_message(message)

    async def _refuse_too_large(self, message: Any) -> None:
        """A message that held a number too long: its operation gets an ``error`` message
        (a subscribe on an acknowledged socket); any other such message is invalid."""
        if (
            message.get("type") == "subscribe"
            and isinstance(message.get("id"), str)
            and self.connection_acknowledged
            and message["id"] not in self.operations
        ):
            refused = number_too_large()
            error = GraphQLError(refused.message, extensions={"code": refused.code})
            await self.send_message(
                ErrorMessage(id=message["id"], type="error", payload=[error.formatted])
            )
            return
        await self.handle_invalid_message("a number in the message is too long")

    async def handle_connection_init(self, message: ConnectionInitMessage) -> None:
        await super().handle_connection_init(message)
        if self.connection_acknowledged and self._watcher is None and self.socket.token:
            self._checked_at = time.monotonic()
            self._watcher = asyncio.create_task(self._watch())

    async def handle_subscribe(self, message: SubscribeMessage) -> None:
        if not _well_formed(message):
            await self.handle_invalid_message("Invalid subscribe message")
            return
        if not self.connection_acknowledged:
            await super().handle_subscribe(message)
            return
        if time.monotonic() - self._checked_at >= RECHECK_SECONDS and not await self._recheck():
            return
        settings = self.socket.services.settings
        per_socket = settings.max_operations_per_socket
        if 0 < per_socket <= len(self.operations) and message["id"] not in self.operations:
            await self._refuse(
                message, f"more than {per_socket} operations in flight on this socket"
            )
            return
        caller = caller_key(self.socket)
        counter: OperationCounter = self.view.socket_operations  # type: ignore[attr-defined]
        if not counter.acquire(caller, settings.max_operations_per_token):
            limit = settings.max_operations_per_token
            await self._refuse(message, f"more than {limit} operations in flight for this token")
            return
        before = self.operations.get(message["id"])
        reset = _operation_context.set(operation_context(self.socket))
        try:
            await super().handle_subscribe(message)
        finally:
            _operation_context.reset(reset)
        started = self.operations.get(message["id"])
        if started is None or started is before or started.task is None:
            counter.release(caller)
            return
        started.task.add_done_callback(lambda _task: counter.release(caller))

    async def _refuse(self, message: SubscribeMessage, reason: str) -> None:
        """An ``error`` message for the operation (coded RATE_LIMITED); the socket stays open."""
        error = GraphQLError(
            f"{reason}: wait for one to end (or complete one) and try again",
            extensions={"code": "RATE_LIMITED"},
        )
        await self.send_message(
            ErrorMessage(id=message["id"], type="error", payload=[error.formatted])
        )

    async def _recheck(self) -> bool:
        """Whether the socket's token still holds; closes the socket when it does not."""
        token = self.socket.token
        self._checked_at = time.monotonic()
        if not token:
            return True
        services = self.socket.services
        found = await authenticate(services, token, services.clock())
        if isinstance(found, AuthFailure):
            logger.info("closing a WebSocket: %s", found.reason)
            with contextlib.suppress(Exception):
                await self.websocket.close(TOKEN_DIED, found.reason[:100])
            return False
        return True

    async def _watch(self) -> None:
        while True:
            await asyncio.sleep(WATCH_SECONDS)
            try:
                if not await self._recheck():
                    return
            except Exception:
                logger.exception("could not check the token of a WebSocket")

    async def shutdown(self) -> None:
        if self._watcher is not None:
            self._watcher.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self._watcher
        await super().shutdown()
