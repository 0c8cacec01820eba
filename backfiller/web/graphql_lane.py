"""The GraphQL endpoint's own lane past Starlette's router.

Nearly every request the service answers is a GET or POST of ``/graphql/v1``. Through
Starlette it passed its server-error and exception middlewares (each wrapping the request in
objects of its own), the router and the route, before reaching strawberry's view, which
handles every error of its own and answers each with a response. This lane hands exactly
the requests of that route (its path, its methods) to the view directly; everything else
(other paths and methods, WebSockets, the lifespan) goes through Starlette as before. An
error the view does not handle reaches the project's ``RequestId`` middleware, which answers
the same masked 500 with the request id as for any other path.

The lane is derived from the route (one declaration of the path and the methods), and
refuses to stand in front of a Starlette application that has middleware or exception
handlers of its own: those would be skipped for the hottest path. A speed path
(``Settings.fast_paths``).
"""

from __future__ import annotations

from starlette.applications import Starlette
from starlette.routing import Route
from starlette.types import ASGIApp, Receive, Scope, Send

API_PATH = "/graphql/v1"


def api_route(graphql: ASGIApp) -> Route:
    """The route of the versioned API's GET and POST (the lane takes the same)."""
    return Route(API_PATH, graphql, methods=["GET", "POST"])


class GraphQLLane:
    """The ``route``'s requests to its endpoint directly; the rest to ``app``."""

    def __init__(self, app: Starlette, route: Route) -> None:
        if app.user_middleware or app.exception_handlers:
            raise ValueError(
                "the GraphQL lane would skip the application's own middleware and exception "
                "handlers: add them around the lane (web/app.py), or turn the fast paths off"
            )
        assert route in app.routes, "the lane's route must be the application's"
        self.app = app
        self.graphql = route.app
        self.path = route.path
        self.methods = frozenset(route.methods or ())

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if (
            scope["type"] == "http"
            and scope["path"] == self.path
            and scope["method"] in self.methods
        ):
            await self.graphql(scope, receive, send)
        else:
            await self.app(scope, receive, send)


__all__ = ["API_PATH", "GraphQLLane", "api_route"]
