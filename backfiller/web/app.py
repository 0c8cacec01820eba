"""The Starlette application: the versioned GraphQL API, health, and the UI."""

from __future__ import annotations

import contextlib
import logging
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route, WebSocketRoute
from starlette.types import ASGIApp, Message, Receive, Scope, Send
from starlette.websockets import WebSocket
from strawberry.asgi import GraphQL
from strawberry.exceptions import MissingQueryError
from strawberry.http import GraphQLRequestData
from strawberry.schema.exceptions import CannotGetOperationTypeError, InvalidOperationTypeError
from strawberry.subscriptions import GRAPHQL_TRANSPORT_WS_PROTOCOL
from strawberry.types.execution import ExecutionResult
from strawberry.types.graphql import OperationType
from strawberry.types.unset import UNSET, UnsetType

from backfiller.api import API_VERSION, build_schema
from backfiller.resolvers.context import Context, Services
from backfiller.web.auth import accept_websocket, request_context, secure
from backfiller.web.graphiql_routes import graphiql_page, graphiql_routes
from backfiller.web.headers import SecurityHeaders
from backfiller.web.host_guard import HostGuard
from backfiller.web.operations import Operations
from backfiller.web.request_body import RequestRefused, decode_json, plain_json_operation
from backfiller.web.request_ids import new_request_id
from backfiller.web.rest import RestApi
from backfiller.web.sessions import no_sign_on_route, sign_on_of
from backfiller.web.sockets import (
    CappedWebSocketAdapter,
    GuardedTransportWSHandler,
    OperationCounter,
)
from backfiller.web.ui_routes import ui_routes

if TYPE_CHECKING:
    from cross_web import AsyncHTTPRequestAdapter  # strawberry's request adapter

logger = logging.getLogger("backfiller.web")

HTTP_OPERATIONS = {
    "GET": {OperationType.QUERY},
    "POST": {OperationType.QUERY, OperationType.MUTATION},
}
"""What each method may run: mutations never over GET, subscriptions over WebSocket only."""
SUBSCRIPTION_OVER_HTTP = (
    "OPERATION_NOT_SUPPORTED",
    "subscriptions are served over WebSocket (graphql-transport-ws), not over HTTP",
)


class PublicGraphQL(GraphQL[Context, None]):
    """Strawberry's ASGI view with our per-request context (per operation on a WebSocket)."""

    websocket_adapter_class = CappedWebSocketAdapter
    graphql_transport_ws_handler_class = GuardedTransportWSHandler

    def __init__(self, services: Services, **kwargs: Any) -> None:
        settings = services.settings
        super().__init__(
            build_schema(settings),
            max_subscriptions_per_connection=settings.max_operations_per_socket,
            **kwargs,
        )
        self.services = services
        self.max_message_bytes = settings.max_body_bytes
        self.socket_operations = OperationCounter()

    async def render_graphql_ide(self, request: Request) -> Response:
        return graphiql_page()  # served from the package, not from a CDN

    async def parse_http_body(
        self, request: AsyncHTTPRequestAdapter
    ) -> GraphQLRequestData | list[GraphQLRequestData]:
        if self.services.settings.fast_paths:  # a speed path (web/request_body.py)
            plain = await plain_json_operation(request, self.decode_json)
            if plain is not None:
                return plain
        return await super().parse_http_body(request)

    def decode_json(self, data: str | bytes) -> object:
        return decode_json(data)  # a number too long is a typed 400 (RequestRefused)

    async def run(  # type: ignore[override]
        self, request: Request | WebSocket, context: Any = UNSET, root_value: Any = UNSET
    ) -> Response | WebSocket:
        """strawberry's, with the refusals of this module answered 400 with their code."""
        try:
            return await super().run(request, context, root_value)
        except RequestRefused as refused:
            return refused.response()

    async def execute_single(
        self,
        request: Request,
        request_adapter: AsyncHTTPRequestAdapter,
        sub_response: Response,
        context: Context,
        root_value: None,
        request_data: GraphQLRequestData,
    ) -> ExecutionResult:
        """strawberry's, but a subscription over HTTP is refused before it runs (strawberry
        would run it, and its stream cannot be an HTTP answer)."""
        try:
            return await self.schema.execute(
                request_data.query,
                root_value=root_value,
                variable_values=request_data.variables,
                context_value=context,
                operation_name=request_data.operation_name,
                allowed_operation_types=HTTP_OPERATIONS[request_adapter.method],
                operation_extensions=request_data.extensions,
            )
        except InvalidOperationTypeError as exc:
            if exc.operation_type is OperationType.SUBSCRIPTION:
                raise RequestRefused(*SUBSCRIPTION_OVER_HTTP) from None
        except (CannotGetOperationTypeError, MissingQueryError):
            pass
        # Refused another way: strawberry's own view says how (and answers it).
        return await super().execute_single(
            request, request_adapter, sub_response, context, root_value, request_data
        )

    async def get_context(
        self, request: Request | WebSocket, response: Response | WebSocket
    ) -> Context:
        request_id = request.scope.get("state", {}).get("request_id") or new_request_id()
        # The principal comes from the gate (backfiller.web.auth); the actor is its token's
        # name (a run's credential names the token that launched its backfill).
        return request_context(self.services, request.scope, request_id)

    async def on_ws_connect(self, context: Context) -> UnsetType | dict[str, object] | None:
        await accept_websocket(context)
        accepted: UnsetType = UNSET
        return accepted


class BodyLimit:
    """413 for request bodies over the limit, whether announced or streamed."""

    def __init__(self, app: ASGIApp, max_bytes: int) -> None:
        self.app = app
        self.max_bytes = max_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        for name, value in scope.get("headers", []):
            if name == b"content-length":
                try:
                    too_big = int(value) > self.max_bytes
                except ValueError:
                    too_big = True
                if too_big:
                    await _too_large(scope, receive, send, self.max_bytes)
                    return
        seen = 0
        refused = False

        async def limited() -> Message:
            nonlocal seen, refused
            message = await receive()
            if message["type"] == "http.request" and not refused:
                seen += len(message.get("body", b""))
                if seen > self.max_bytes:
                    # Answer now; the application sees a client that went away.
                    refused = True
                    await _too_large(scope, receive, send, self.max_bytes)
                    return {"type": "http.disconnect"}
            return message

        async def guarded_send(message: Message) -> None:
            if not refused:
                await send(message)

        try:
            await self.app(scope, limited, guarded_send)
        except Exception:
            if not refused:
                raise


async def _too_large(scope: Scope, receive: Receive, send: Send, limit: int) -> None:
    response = JSONResponse(
        {
            "errors": [
                {
                    "message": f"request body larger than {limit} bytes",
                    "extensions": {"code": "PAYLOAD_TOO_LARGE"},
                }
            ]
        },
        status_code=413,
    )
    await response(scope, receive, send)


class RequestId:
    """Give every request an id, echo it in ``X-Request-ID``, and mask uncaught errors."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] not in ("http", "websocket"):
            await self.app(scope, receive, send)
            return
        request_id = new_request_id()
        scope.setdefault("state", {})["request_id"] = request_id
        started = False

        async def send_with_id(message: Message) -> None:
            nonlocal started
            if message["type"] == "http.response.start":
                started = True
                headers = list(message.get("headers", []))
                headers.append((b"x-request-id", request_id.encode()))
                message = {**message, "headers": headers}
            await send(message)

        try:
            await self.app(scope, receive, send_with_id)
        except Exception:
            logger.exception("unhandled error in request %s", request_id)
            if scope["type"] != "http" or started:
                raise
            response = JSONResponse(
                {
                    "errors": [
                        {
                            "message": "Internal server error.",
                            "extensions": {"code": "INTERNAL_ERROR", "requestId": request_id},
                        }
                    ]
                },
                status_code=500,
            )
            await response(scope, receive, send_with_id)


async def health(request: Request) -> Response:
    return JSONResponse({"status": "ok", "apiVersion": API_VERSION})


def create_app(services: Services) -> ASGIApp:
    """The whole web application around one set of services."""
    graphql = PublicGraphQL(
        services,
        graphql_ide="graphiql",
        allow_queries_via_get=True,
        subscription_protocols=(GRAPHQL_TRANSPORT_WS_PROTOCOL,),
    )

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        yield
        await services.database.dispose()

    sign_on = sign_on_of(services)  # single sign-on (web/sessions.py), when configured
    routes = [
        *(sign_on.routes() if sign_on else [no_sign_on_route()]),
        Route("/graphql/v1", graphql, methods=["GET", "POST"]),
        WebSocketRoute("/graphql/v1", graphql),
        Route("/graphql", graphql, methods=["GET", "POST"]),
        WebSocketRoute("/graphql", graphql),
        Route("/healthz", health),
        *ui_routes(),
        *graphiql_routes(),
        RestApi(graphql, services.settings.max_page_size).mount(),
    ]
    app = Starlette(routes=routes, lifespan=lifespan)
    app.state.services = services
    settings = services.settings
    limited = BodyLimit(app, settings.max_body_bytes)
    # Outermost, the headers of every answer: the masked 500 that RequestId writes, and
    # /metrics and /readyz, which Operations answers (after their Host check), included.
    operations = Operations(secure(limited, services, sign_on), services)
    return SecurityHeaders(RequestId(HostGuard(operations, settings)), settings)
