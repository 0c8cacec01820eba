"""Metrics of the API: HTTP requests by route, GraphQL root fields by outcome.

Labels are bounded: ``route`` is one of :data:`ROUTES`, ``operation`` a root field of the schema
(the document was validated against it before it runs), ``code`` a ``UserErrorCode`` name.
Never a backfill id, a partition key or a client-chosen operation name.
"""

from __future__ import annotations

import inspect
import time
from collections.abc import Callable, Iterator
from typing import Any

from graphql import GraphQLError
from prometheus_client import Counter, Gauge, Histogram

from backfiller.observability import db_metrics, logs, tracing
from backfiller.root_fields import RootFieldExtension

ROUTES = ("graphql", "rest", "health", "metrics", "ui", "other")
METHODS = frozenset({"GET", "HEAD", "POST", "OPTIONS", "PUT", "PATCH", "DELETE"})
RATE_LIMITED = "RATE_LIMITED"

HTTP_REQUESTS = Counter(
    "backfiller_http_requests_total",
    "HTTP requests answered, by route, method and status code.",
    ["route", "method", "status"],
)
HTTP_DURATION = Histogram(
    "backfiller_http_request_duration_seconds",
    "Time to answer an HTTP request, by route.",
    ["route"],
)
HTTP_IN_PROGRESS = Gauge(
    "backfiller_http_requests_in_progress",
    "HTTP requests being answered.",
    multiprocess_mode="livesum",
)
OPERATIONS = Counter(
    "backfiller_api_operations_total",
    "GraphQL root fields resolved (a REST call is one), by field and outcome "
    "(ok, user_error, error).",
    ["operation", "outcome"],
)
OPERATION_DURATION = Histogram(
    "backfiller_api_operation_duration_seconds",
    "Time to resolve a GraphQL root field, by field (launchBackfill among them).",
    ["operation"],
    buckets=(0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0),
)
USER_ERRORS = Counter(
    "backfiller_api_user_errors_total",
    "userErrors returned, by root field and code.",
    ["operation", "code"],
)
RATE_LIMIT_REFUSALS = Counter(
    "backfiller_api_rate_limit_refusals_total",
    "Requests refused by the per-token rate limit, by root field.",
    ["operation"],
)

db_metrics.install()


def route_of(path: str) -> str:
    """The bounded route label of a request path."""
    if path.startswith("/graphql"):
        return "graphql"
    if path.startswith("/api/"):
        return "rest"
    if path in ("/healthz", "/readyz"):
        return "health"
    if path == "/metrics":
        return "metrics"
    if path == "/" or path.startswith(("/ui", "/static", "/assets", "/backfills", "/jobs")):
        return "ui"
    return "other"


# The bound children of each label set, looked up once: ``.labels(...)`` costs several times
# what recording does. The label sets are bounded (see above), and so are these dicts.
_http_children: dict[tuple[str, str, int], tuple[Any, Any]] = {}
_operation_children: dict[str, tuple[Any, Any, Any, Any]] = {}


def observe_http(route: str, method: str, status: int, seconds: float) -> None:
    key = (route, method if method in METHODS else "other", status)
    children = _http_children.get(key)
    if children is None:
        children = (HTTP_REQUESTS.labels(route, key[1], str(status)), HTTP_DURATION.labels(route))
        _http_children[key] = children
    requests, duration = children
    requests.inc()
    duration.observe(seconds)


def _operation(operation: str) -> tuple[Any, Any, Any, Any]:
    """Duration, and counters of the outcomes ok, user_error and error, of a root field."""
    children = _operation_children.get(operation)
    if children is None:
        children = (
            OPERATION_DURATION.labels(operation),
            OPERATIONS.labels(operation, "ok"),
            OPERATIONS.labels(operation, "user_error"),
            OPERATIONS.labels(operation, "error"),
        )
        _operation_children[operation] = children
    return children


def _codes_of(payload: Any) -> list[str]:
    errors = getattr(payload, "user_errors", None) or ()
    codes = []
    for error in errors:
        code = getattr(error, "code", None)
        codes.append(str(getattr(code, "name", code)))
    return codes


def observe_operation(operation: str, seconds: float, payload: Any, failed: bool) -> None:
    """Count one resolved root field; its userErrors come from the payload object itself, so
    they are counted whether or not the client selected them."""
    duration, ok, user_error, error = _operation(operation)
    duration.observe(seconds)
    if failed:
        error.inc()
        return
    codes = _codes_of(payload)
    (user_error if codes else ok).inc()
    for code in codes:
        USER_ERRORS.labels(operation, code).inc()
        if code == RATE_LIMITED:
            RATE_LIMIT_REFUSALS.labels(operation).inc()


def _error_code(exc: BaseException) -> str | None:
    if isinstance(exc, GraphQLError) and exc.extensions:
        code = exc.extensions.get("code")
        return str(code) if code is not None else None
    return None


class OperationMetrics(RootFieldExtension):
    """Times every root field and counts its outcome; binds the request's id and actor to
    the log lines of the operation. Put it first among the extensions, so that it also sees
    the refusals of the access extension."""

    def on_execute(self) -> Iterator[None]:
        context = self.execution_context.context
        token = logs.bind(
            request_id=getattr(context, "request_id", None) or None,
            actor=getattr(context, "actor", None),
        )
        try:
            yield
        except GeneratorExit:
            # Closed unfinished (an earlier extension refused the operation), possibly later by
            # the garbage collector in another context, where the token cannot be reset.
            return
        except BaseException:
            logs.unbind(token)
            raise
        logs.unbind(token)

    def resolve_root(
        self, _next: Callable[..., Any], root: Any, info: Any, *args: Any, **kwargs: Any
    ) -> Any:
        name: str = info.field_name
        if tracing.enabled():
            return self._traced(name, _next, root, info, *args, **kwargs)
        began = time.perf_counter()
        try:
            result = _next(root, info, *args, **kwargs)
        except Exception as exc:
            self._failed(name, began, exc)
            raise
        if inspect.isawaitable(result):
            return self._finish(name, began, result)
        observe_operation(name, time.perf_counter() - began, result, False)
        return result

    async def _traced(
        self, name: str, _next: Callable[..., Any], root: Any, info: Any, *args: Any, **kwargs: Any
    ) -> Any:
        """The root field's span, under the request's; the statements nest under it."""
        with tracing.span(f"graphql {name}", {"graphql.field": name}):
            began = time.perf_counter()
            try:
                result = _next(root, info, *args, **kwargs)
            except Exception as exc:
                self._failed(name, began, exc)
                raise
            if inspect.isawaitable(result):
                return await self._finish(name, began, result)
            observe_operation(name, time.perf_counter() - began, result, False)
            return result

    async def _finish(self, name: str, began: float, awaitable: Any) -> Any:
        try:
            result = await awaitable
        except Exception as exc:
            self._failed(name, began, exc)
            raise
        observe_operation(name, time.perf_counter() - began, result, False)
        return result

    @staticmethod
    def _failed(name: str, began: float, exc: BaseException) -> None:
        observe_operation(name, time.perf_counter() - began, None, True)
        code = _error_code(exc)
        if code is not None:
            USER_ERRORS.labels(name, code).inc()
            if code == RATE_LIMITED:
                RATE_LIMIT_REFUSALS.labels(name).inc()
