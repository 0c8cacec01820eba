"""The GraphQL endpoint's own lane past Starlette's router.

Nearly every request the service answers is a GET or POST of ``/graphql/v1``. Through
Starlette it passed its server-error and exception middlewares (each wrapping the request in
objects of its own), the router and the route, before reaching strawberry's view, which
handles every error of its own and answers each with a response. This lane hands exactly
those requests to the view directly; everything else (other paths and methods, WebSockets,
the lifespan) goes through Starlette as before. An error the view does not handle reaches the
project's ``RequestId`` middleware, which answers the same masked 500 with the request id as
for any other path.
"""

from __future__ import annotations

from starlette.types import ASGIApp, Receive, Scope, Send

LANE_PATH = "/graphql/v1"
LANE_METHODS = frozenset({"GET", "POST"})


class GraphQLLane:
    """``graphql`` for GET and POST of ``/graphql/v1``; ``app`` for the rest."""

    def __init__(self, app: ASGIApp, graphql: ASGIApp) -> None:
        self.app = app
        self.graphql = graphql

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if (
            scope["type"] == "http"
            and scope["path"] == LANE_PATH
            and scope["method"] in LANE_METHODS
        ):
            await self.graphql(scope, receive, send)
        else:
            await self.app(scope, receive, send)
