"""The REST endpoint (``/api/v1``): a thin JSON shape over the public GraphQL API.

Every route executes one fixed operation of ``contracts/v1/operations/rest.graphql`` through the
same strawberry schema and per-request context as ``/graphql/v1``, so validation, translation,
auth, limits and error masking are the GraphQL API's own. This module only moves values between
HTTP (path, query string, JSON body, status codes) and GraphQL (variables, ``data``,
``userErrors``, top-level errors). The OpenAPI 3.1 document is generated from the same
operations and the printed schema.
"""

from __future__ import annotations

import json
import re
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any

import graphql
from graphql import (
    DocumentNode,
    FragmentDefinitionNode,
    FragmentSpreadNode,
    GraphQLError,
    GraphQLInputObjectType,
    Node,
    OperationDefinitionNode,
    parse,
    print_ast,
)
from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Mount, Route
from strawberry.asgi import GraphQL
from strawberry.types.execution import ExecutionResult

from backfiller.resolvers.context import Context
from backfiller.schema.common import UserErrorCode
from backfiller.web.openapi import JsonSchema, SchemaBuilder, nullable, ref

PREFIX = "/api/v1"
OPERATIONS_NAME = "rest.graphql"

# Codes of the REST transport itself, beside the GraphQL ``UserErrorCode`` values.
REST_ONLY_CODES = (
    "MALFORMED_JSON",
    "UNSUPPORTED_MEDIA_TYPE",
    "METHOD_NOT_ALLOWED",
    "INTERNAL_ERROR",
)

KNOWN_CODES = frozenset({c.value for c in UserErrorCode} | set(REST_ONLY_CODES))

# The HTTP status of an error answer, by its code, strongest first. Anything else is 422.
STATUS_OF_CODE: dict[str, int] = {
    "UNAUTHENTICATED": 401,
    "FORBIDDEN": 403,
    "RATE_LIMITED": 429,
    "INTERNAL_ERROR": 500,
    "BACKFILL_NOT_FOUND": 404,
    "NOT_FOUND": 404,
    "INVALID_STATE": 409,
}


def operations_path() -> Path:
    """The operation document: shipped beside this module in a wheel, else in ``contracts/``."""
    shipped = Path(__file__).with_name(OPERATIONS_NAME)
    if shipped.exists():
        return shipped
    return Path(__file__).resolve().parents[2] / "contracts" / "v1" / "operations" / OPERATIONS_NAME


@dataclass(frozen=True)
class Operations:
    """The parsed document, and each operation as a standalone document with its fragments."""

    document: DocumentNode
    texts: dict[str, str]


def load_operations(path: Path | None = None) -> Operations:
    document = parse((path or operations_path()).read_text())
    fragments = {
        d.name.value: d for d in document.definitions if isinstance(d, FragmentDefinitionNode)
    }
    texts: dict[str, str] = {}
    for definition in document.definitions:
        if isinstance(definition, OperationDefinitionNode) and definition.name is not None:
            used = _fragments_used(definition, fragments)
            standalone = DocumentNode(definitions=(definition, *(fragments[n] for n in used)))
            texts[definition.name.value] = print_ast(standalone)
    return Operations(document=document, texts=texts)


def _fragments_used(node: Node, fragments: dict[str, FragmentDefinitionNode]) -> list[str]:
    found: list[str] = []

    class Collect(graphql.Visitor):
        def enter_fragment_spread(self, spread: FragmentSpreadNode, *_: Any) -> None:
            name = spread.name.value
            if name not in found:
                found.append(name)
                graphql.visit(fragments[name], self)

    graphql.visit(node, Collect())
    return found


# -- error bodies ----------------------------------------------------------------------------


def error(code: str, message: str, field: list[str] | None = None) -> dict[str, Any]:
    return {"field": field, "message": message, "code": code}


def status_for(codes: Iterable[str], default: int = 422) -> int:
    present = set(codes)
    for code, status in STATUS_OF_CODE.items():
        if code in present:
            return status
    return default


def errors_response(
    errors: list[dict[str, Any]], status: int | None = None, headers: dict[str, str] | None = None
) -> JSONResponse:
    if status is None:
        status = status_for(e["code"] for e in errors)
    return JSONResponse({"userErrors": errors}, status_code=status, headers=headers)


_VARIABLE_ERROR = re.compile(
    r"^Variable '\$(?P<var>\w+)' has invalid value(?: at (?P<at>[^:]*))?: (?P<msg>.*)$", re.S
)
_UNKNOWN_FIELD = re.compile(r"unknown field '(?P<name>[^']+)'")
_PATH_STEP = re.compile(r"\.([A-Za-z_]\w*)|\[(\d+)\]")


def _from_graphql_error(
    err: GraphQLError, roots: dict[str, list[str]], rename: dict[str, str]
) -> dict[str, Any]:
    """One top-level GraphQL error as a REST error, with the body path it points at."""
    extensions = err.extensions or {}
    code = str(extensions.get("code") or "")
    if code not in KNOWN_CODES:  # GRAPHQL_VALIDATION_FAILED and other GraphQL-level codes
        code = "INVALID_ARGUMENT"
    message = err.message
    field: list[str] | None = None
    matched = _VARIABLE_ERROR.match(message)
    if matched:
        field = list(roots.get(matched["var"], [matched["var"]]))
        for name, index in _PATH_STEP.findall(matched["at"] or ""):
            field.append(name or index)
        if field and field[0] in rename:
            field = [rename[field[0]]]
        message = matched["msg"].split(", found: ")[0].rstrip(".") + "."
        unknown = _UNKNOWN_FIELD.search(message)
        if unknown:
            field.append(unknown["name"])
        code = "INVALID_ARGUMENT"
    return error(code, message, field or None)


def graphql_errors_response(
    errors: list[GraphQLError], roots: dict[str, list[str]], rename: dict[str, str], request_id: str
) -> JSONResponse:
    converted = [_from_graphql_error(e, roots, rename) for e in errors]
    status = status_for(e["code"] for e in converted)
    if status == 500:
        converted = [error("INTERNAL_ERROR", f"Internal server error (request {request_id}).")]
    return errors_response(converted, status)


# -- request bodies --------------------------------------------------------------------------


class BodyError(Exception):
    def __init__(self, response: Response) -> None:
        self.response = response


def _is_json(content_type: str) -> bool:
    media = content_type.split(";", 1)[0].strip().lower()
    return media == "application/json" or (
        media.startswith("application/") and media.endswith("+json")
    )


def _no_constants(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


async def read_object(request: Request, required: bool) -> dict[str, Any]:
    """The JSON object in the body; ``{}`` for an absent optional body."""
    raw = await request.body()
    if not raw.strip() and not required:
        return {}
    if not _is_json(request.headers.get("content-type", "")):
        raise BodyError(
            errors_response(
                [error("UNSUPPORTED_MEDIA_TYPE", "send the body as application/json")], 415
            )
        )
    try:
        value = json.loads(raw, parse_constant=_no_constants)
    except (ValueError, RecursionError) as exc:
        message = str(exc) if isinstance(exc, ValueError) else "too deeply nested"
        raise BodyError(
            errors_response([error("MALFORMED_JSON", f"the body is not JSON: {message}")], 400)
        ) from None
    if not isinstance(value, dict):
        raise BodyError(
            errors_response([error("INVALID_ARGUMENT", "the body must be a JSON object")], 422)
        )
    return value


# -- the routes ------------------------------------------------------------------------------

Handler = Callable[[Request], Awaitable[Response]]


class RestApi:
    """The ``/api/v1`` routes around one GraphQL view (its schema and its context)."""

    def __init__(self, view: GraphQL[Context, None], max_page_size: int) -> None:
        self.view = view
        self.max_page_size = max_page_size
        self.operations = load_operations()

    async def execute(
        self, request: Request, operation: str, variables: dict[str, Any]
    ) -> ExecutionResult:
        context = await self.view.get_context(request, Response())
        result = await self.view.schema.execute(
            self.operations.texts[operation],
            variable_values=variables,
            context_value=context,
            operation_name=operation,
        )
        assert isinstance(result, ExecutionResult)
        return result

    @staticmethod
    def request_id(request: Request) -> str:
        return str(request.scope.get("state", {}).get("request_id", ""))

    async def run(
        self,
        request: Request,
        operation: str,
        variables: dict[str, Any],
        roots: dict[str, list[str]] | None = None,
        rename: dict[str, str] | None = None,
    ) -> dict[str, Any] | Response:
        """``data`` of the operation, or the error response for its top-level errors.

        ``roots`` says where in the request each variable came from (``input`` is the body's
        root); ``rename`` maps a GraphQL input field to the query parameter that carried it.
        """
        result = await self.execute(request, operation, variables)
        if result.errors:
            return graphql_errors_response(
                result.errors, roots or {"input": []}, rename or {}, self.request_id(request)
            )
        assert result.data is not None
        return result.data

    # launch and preview ---------------------------------------------------------------------

    async def launch(self, request: Request) -> Response:
        try:
            body = await read_object(request, required=True)
        except BodyError as exc:
            return exc.response
        data = await self.run(request, "RestLaunchBackfill", {"input": body})
        if isinstance(data, Response):
            return data
        return self.backfill_answer(data["launchBackfill"], 201)

    async def preview(self, request: Request) -> Response:
        try:
            body = await read_object(request, required=True)
        except BodyError as exc:
            return exc.response
        data = await self.run(request, "RestPreviewBackfill", {"input": body})
        if isinstance(data, Response):
            return data
        payload = data["previewBackfill"]
        if payload["userErrors"]:
            return errors_response(payload["userErrors"])
        return JSONResponse(payload["preview"])

    def backfill_answer(self, payload: dict[str, Any], status: int) -> Response:
        if payload["userErrors"]:
            return errors_response(payload["userErrors"])
        backfill = payload["backfill"]
        headers = {"Location": f"{PREFIX}/backfills/{backfill['id']}"} if status == 201 else None
        return JSONResponse(backfill, status_code=status, headers=headers)

    async def list_or_launch(self, request: Request) -> Response:
        if request.method == "POST":
            return await self.launch(request)
        return await self.list(request)

    # reads ----------------------------------------------------------------------------------

    async def list(self, request: Request) -> Response:
        params = request.query_params
        variables: dict[str, Any] = {"first": 20, "after": params.get("after")}
        problems: list[dict[str, Any]] = []
        if "first" in params:
            if re.fullmatch(r"-?[0-9]{1,12}", params["first"]):
                variables["first"] = int(params["first"])
            else:
                problems.append(error("INVALID_ARGUMENT", "`first` must be an integer", ["first"]))
        filter_: dict[str, Any] = {}
        if "status" in params:
            filter_["statuses"] = params.getlist("status")
        if "job" in params:
            filter_["job"] = params["job"]
        if "tag" in params:
            key, sep, value = params["tag"].partition("=")
            if sep:
                filter_["tag"] = {"key": key, "value": value}
            else:
                problems.append(error("INVALID_ARGUMENT", "`tag` must be key=value", ["tag"]))
        if problems:
            return errors_response(problems, 422)
        variables["filter"] = filter_ or None
        data = await self.run(
            request,
            "RestListBackfills",
            variables,
            roots={"first": ["first"], "after": ["after"], "filter": []},
            rename={"statuses": "status"},
        )
        if isinstance(data, Response):
            return data
        page = data["backfills"]
        return JSONResponse({"backfills": page["nodes"], "pageInfo": page["pageInfo"]})

    async def get(self, request: Request) -> Response:
        raw_id = request.path_params["id"]
        data = await self.run(request, "RestGetBackfill", {"id": raw_id}, roots={"id": ["id"]})
        if isinstance(data, Response):
            return data
        if data["backfill"] is None:
            return errors_response(
                [error("BACKFILL_NOT_FOUND", f"no backfill has id {raw_id!r}", ["id"])], 404
            )
        return JSONResponse(data["backfill"])

    # steering -------------------------------------------------------------------------------

    def steer(self, operation: str, field: str, status: int) -> Handler:
        async def handle(request: Request) -> Response:
            try:
                body = await read_object(request, required=False)
            except BodyError as exc:
                return exc.response
            if "id" in body:
                return errors_response(
                    [error("INVALID_ARGUMENT", "the id belongs in the URL, not the body", ["id"])],
                    422,
                )
            data = await self.run(
                request, operation, {"input": {**body, "id": request.path_params["id"]}}
            )
            if isinstance(data, Response):
                return data
            return self.backfill_answer(data[field], status)

        return handle

    async def openapi(self, request: Request) -> Response:
        return JSONResponse(self.document)

    @cached_property
    def document(self) -> dict[str, Any]:
        return build_openapi(self.view.schema.as_str(), self.operations, self.max_page_size)

    def app(self) -> Starlette:
        routes = [
            Route("/openapi.json", self.openapi, methods=["GET"]),
            Route("/backfills", self.list_or_launch, methods=["GET", "POST"]),
            Route("/backfills:preview", self.preview, methods=["POST"]),
            Route("/backfills/{id}", self.get, methods=["GET"]),
            Route(
                "/backfills/{id}/pause",
                self.steer("RestPauseBackfill", "pauseBackfill", 200),
                methods=["POST"],
            ),
            Route(
                "/backfills/{id}/resume",
                self.steer("RestResumeBackfill", "resumeBackfill", 200),
                methods=["POST"],
            ),
            Route(
                "/backfills/{id}/cancel",
                self.steer("RestCancelBackfill", "cancelBackfill", 200),
                methods=["POST"],
            ),
            Route(
                "/backfills/{id}/retry",
                self.steer("RestRetryBackfill", "retryBackfill", 201),
                methods=["POST"],
            ),
        ]
        return Starlette(routes=routes, exception_handlers={HTTPException: http_error})

    def mount(self) -> Mount:
        """The routes under ``/api/v1``, for the server's route list."""
        mount = Mount(PREFIX, app=self.app())
        # An id may hold any character, a newline too: let the prefix match it.
        mount.path_regex = re.compile(mount.path_regex.pattern, re.DOTALL)
        return mount


async def http_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, HTTPException)
    if exc.status_code == 405:
        body = error("METHOD_NOT_ALLOWED", f"{request.method} is not allowed here")
    elif exc.status_code == 404:
        body = error("NOT_FOUND", f"no route {request.url.path}")
    else:
        body = error("INVALID_ARGUMENT", str(exc.detail))
    return errors_response([body], exc.status_code, headers=dict(exc.headers or {}))


# -- the OpenAPI document --------------------------------------------------------------------

_JSON = "application/json"


def _content(schema: JsonSchema) -> dict[str, Any]:
    return {_JSON: {"schema": schema}}


def _response(description: str, schema: JsonSchema, **extra: Any) -> dict[str, Any]:
    return {"description": description, "content": _content(schema), **extra}


def build_openapi(sdl: str, operations: Operations, max_page_size: int) -> dict[str, Any]:
    """The OpenAPI 3.1 document of the routes above, derived from the contract."""
    gql = graphql.build_schema(sdl)
    builder = SchemaBuilder(gql, operations.document)
    builder.name_fragment("RestBackfill", "Backfill")
    doc = operations.document
    components = builder.components

    launch_input = builder.input_type(_non_null(gql, "LaunchBackfillInput"))
    retry_type = gql.get_type("RetryBackfillInput")
    assert isinstance(retry_type, GraphQLInputObjectType)
    components["RetryBackfillBody"] = builder.input_object(retry_type, omit=frozenset({"id"}))
    pause_type = gql.get_type("PauseBackfillInput")
    assert isinstance(pause_type, GraphQLInputObjectType)
    components["EmptyBody"] = builder.input_object(pause_type, omit=frozenset({"id"}))
    components["BackfillDetail"] = builder.operation_field(doc, "RestGetBackfill", ["backfill"])
    components["BackfillPreview"] = builder.operation_field(
        doc, "RestPreviewBackfill", ["previewBackfill", "preview"]
    )
    components["BackfillPage"] = {
        "type": "object",
        "properties": {
            "backfills": {"type": "array", "items": ref("Backfill")},
            "pageInfo": builder.operation_field(
                doc, "RestListBackfills", ["backfills", "pageInfo"]
            ),
        },
        "required": ["backfills", "pageInfo"],
    }
    user_codes = builder.enum(_named_enum(gql, "UserErrorCode"))
    components["ErrorCode"] = {
        "description": "A `UserErrorCode` of the GraphQL API, or a code of the REST transport.",
        "anyOf": [user_codes, {"type": "string", "enum": list(REST_ONLY_CODES)}],
    }
    components["Error"] = {
        "type": "object",
        "properties": {
            "field": nullable({"type": "array", "items": {"type": "string"}}),
            "message": {"type": "string"},
            "code": ref("ErrorCode"),
        },
        "required": ["field", "message", "code"],
    }
    components["ErrorBody"] = {
        "type": "object",
        "properties": {"userErrors": {"type": "array", "items": ref("Error"), "minItems": 1}},
        "required": ["userErrors"],
    }
    components["TooLargeBody"] = {
        "type": "object",
        "description": "The answer of the server's body limit, shared with /graphql/v1.",
        "properties": {"errors": {"type": "array", "items": {"type": "object"}}},
        "required": ["errors"],
    }

    def errors(*statuses: int) -> dict[str, Any]:
        described = {
            400: "The body is not JSON (`MALFORMED_JSON`).",
            401: "No valid token (`UNAUTHENTICATED`).",
            403: "The token's role does not allow this (`FORBIDDEN`).",
            404: "No backfill has this id (`BACKFILL_NOT_FOUND`).",
            409: "The backfill's status does not allow this (`INVALID_STATE`).",
            415: "The body is not `application/json` (`UNSUPPORTED_MEDIA_TYPE`).",
            422: "The request was refused: the `userErrors` of the GraphQL API, or "
            "`INVALID_ARGUMENT` for a value of the wrong shape or an unknown field.",
            429: "Too many requests (`RATE_LIMITED`).",
        }
        out = {str(s): _response(described[s], ref("ErrorBody")) for s in statuses}
        if 400 in statuses:
            out["413"] = _response("The body is over the server's limit.", ref("TooLargeBody"))
        return out

    auth = (401, 403, 429)
    with_body = (400, 415, 422, *auth)
    id_param = {
        "name": "id",
        "in": "path",
        "required": True,
        "description": "The backfill's opaque id.",
        "schema": {"type": "string"},
    }
    example_input = {
        "target": {"job": "daily_sales"},
        "partitions": {"range": {"start": "2024-01-01", "end": "2024-01-07"}},
        "title": "First week of 2024",
        "tags": [{"key": "ticket", "value": "DATA-42"}],
    }
    launch_body = {
        "required": True,
        "content": {_JSON: {"schema": launch_input, "example": example_input}},
    }
    location = {
        "Location": {"description": "The URL of the new backfill.", "schema": {"type": "string"}}
    }

    def steer(verb: str, summary: str, status: int, body: str) -> dict[str, Any]:
        ok = (
            _response("The new backfill.", ref("Backfill"), headers=location)
            if status == 201
            else _response("The backfill after the change.", ref("Backfill"))
        )
        return {
            "post": {
                "operationId": f"{verb}Backfill",
                "summary": summary,
                "parameters": [id_param],
                "requestBody": {"required": False, "content": _content(ref(body))},
                "responses": {str(status): ok, **errors(404, 409, *with_body)},
            }
        }

    paths: dict[str, Any] = {
        f"{PREFIX}/backfills": {
            "get": {
                "operationId": "listBackfills",
                "summary": "Backfills of every job, newest first.",
                "parameters": [
                    {
                        "name": "first",
                        "in": "query",
                        "description": f"Page size, at most {max_page_size}.",
                        "schema": {"type": "integer", "minimum": 0, "maximum": max_page_size},
                    },
                    {
                        "name": "after",
                        "in": "query",
                        "description": "`pageInfo.endCursor` of the previous page.",
                        "schema": {"type": "string"},
                    },
                    {
                        "name": "status",
                        "in": "query",
                        "description": "Only backfills in these statuses.",
                        "schema": {"type": "array", "items": ref("BackfillStatus")},
                        "style": "form",
                        "explode": True,
                    },
                    {
                        "name": "job",
                        "in": "query",
                        "description": "Only backfills of this job.",
                        "schema": {"type": "string"},
                    },
                    {
                        "name": "tag",
                        "in": "query",
                        "description": "Only backfills with this tag, as `key=value`.",
                        "schema": {"type": "string", "pattern": "^[^=]*=.*$"},
                    },
                ],
                "responses": {
                    "200": _response("One page of backfills.", ref("BackfillPage")),
                    **errors(422, *auth),
                },
            },
            "post": {
                "operationId": "launchBackfill",
                "summary": "Launch a backfill (the fields of GraphQL's `LaunchBackfillInput`).",
                "requestBody": launch_body,
                "responses": {
                    "201": _response(
                        "The backfill (also for a repeated idempotency key).",
                        ref("Backfill"),
                        headers=location,
                    ),
                    **errors(*with_body),
                },
            },
        },
        f"{PREFIX}/backfills:preview": {
            "post": {
                "operationId": "previewBackfill",
                "summary": "What launching would do. Writes nothing.",
                "requestBody": launch_body,
                "responses": {
                    "200": _response("The preview.", ref("BackfillPreview")),
                    **errors(*with_body),
                },
            }
        },
        f"{PREFIX}/backfills/{{id}}": {
            "get": {
                "operationId": "getBackfill",
                "summary": "One backfill, with its partitions folded into status ranges.",
                "parameters": [id_param],
                "responses": {
                    "200": _response("The backfill.", ref("BackfillDetail")),
                    **errors(404, 422, *auth),
                },
            }
        },
        f"{PREFIX}/backfills/{{id}}/pause": steer(
            "pause", "Stop launching new runs; runs in flight finish.", 200, "EmptyBody"
        ),
        f"{PREFIX}/backfills/{{id}}/resume": steer(
            "resume", "Continue a paused backfill.", 200, "EmptyBody"
        ),
        f"{PREFIX}/backfills/{{id}}/cancel": steer(
            "cancel", "Stop launching runs and stop the runs in flight.", 200, "EmptyBody"
        ),
        f"{PREFIX}/backfills/{{id}}/retry": steer(
            "retry",
            "Launch the chosen partitions of a finished backfill again, as its child.",
            201,
            "RetryBackfillBody",
        ),
        f"{PREFIX}/openapi.json": {
            "get": {
                "operationId": "getOpenApi",
                "summary": "This document.",
                "responses": {
                    "200": _response("OpenAPI 3.1.", {"type": "object"}),
                    **errors(*auth),
                },
            }
        },
    }
    return {
        "openapi": "3.1.0",
        "info": {
            "title": "Backfiller REST API",
            "version": "v1",
            "description": "Backfills over REST. Each route runs a fixed operation of the "
            "GraphQL API (/graphql/v1): same validation, same `userErrors`, same auth.",
        },
        "paths": paths,
        "components": {
            "schemas": dict(sorted(components.items())),
            "securitySchemes": {"bearer": {"type": "http", "scheme": "bearer"}},
        },
        "security": [{}, {"bearer": []}],
    }


def _non_null(schema: graphql.GraphQLSchema, name: str) -> graphql.GraphQLNonNull[Any]:
    type_ = schema.get_type(name)
    assert isinstance(type_, GraphQLInputObjectType)
    return graphql.GraphQLNonNull(type_)


def _named_enum(schema: graphql.GraphQLSchema, name: str) -> graphql.GraphQLEnumType:
    type_ = schema.get_type(name)
    assert isinstance(type_, graphql.GraphQLEnumType)
    return type_
