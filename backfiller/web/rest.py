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
from typing import Any, cast

import strawberry
from graphql import DocumentNode, GraphQLError, GraphQLSchema, OperationDefinitionNode, parse
from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Mount, Route
from strawberry.asgi import GraphQL
from strawberry.types.execution import ExecutionResult

from backfiller.resolvers.authorize_early import refusals_before_coercion
from backfiller.resolvers.context import Context
from backfiller.schema.common import UserErrorCode
from backfiller.web.request_body import MAX_DIGITS
from backfiller.web.rest_openapi import MAX_ASSET_PAGE, PREFIX, REST_ONLY_CODES, build_openapi
from backfiller.web.rest_variables import VariableProblem, variable_problems
from backfiller_client._operations import split_operations

OPERATIONS_NAME = "rest.graphql"

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

    def definition(self, name: str) -> OperationDefinitionNode:
        found = {
            d.name.value: d
            for d in self.document.definitions
            if isinstance(d, OperationDefinitionNode) and d.name is not None
        }
        return found[name]


def load_operations(path: Path | None = None) -> Operations:
    text = (path or operations_path()).read_text()
    return Operations(document=parse(text), texts=split_operations(text))


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


def _from_graphql_error(err: GraphQLError) -> dict[str, Any]:
    """A top-level GraphQL error (auth, limits, a masked failure) as a REST error."""
    extensions = err.extensions or {}
    code = str(extensions.get("code") or "")
    if code not in KNOWN_CODES:  # GRAPHQL_VALIDATION_FAILED and other GraphQL-level codes
        code = "INVALID_ARGUMENT"
    return error(code, err.message)


def _from_variable_problem(
    problem: VariableProblem, roots: dict[str, list[str]], rename: dict[str, str]
) -> dict[str, Any]:
    """A bad value as a REST error whose field is where the request carried it."""
    field = [*roots.get(problem.variable, [problem.variable]), *map(str, problem.path)]
    if field and field[0] in rename:
        field = [rename[field[0]]]
    return error("INVALID_ARGUMENT", problem.message, field or None)


def variable_errors_response(
    problems: list[VariableProblem], roots: dict[str, list[str]], rename: dict[str, str]
) -> JSONResponse:
    return errors_response([_from_variable_problem(p, roots, rename) for p in problems], 422)


def graphql_errors_response(errors: list[GraphQLError], request_id: str) -> JSONResponse:
    converted = [_from_graphql_error(e) for e in errors]
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


class _NotJson(ValueError):
    """NaN and infinities, which Python's parser takes and JSON does not."""


def _no_constants(name: str) -> Any:
    raise _NotJson(f"{name} is not JSON")


def _why_not_json(exc: ValueError | RecursionError) -> str:
    if isinstance(exc, RecursionError):
        return "too deeply nested"
    if isinstance(exc, json.JSONDecodeError | _NotJson):
        return str(exc)
    if isinstance(exc, UnicodeDecodeError):
        return "not UTF-8"
    # What else json.loads raises: an integer longer than the interpreter converts.
    return f"a number has more than {MAX_DIGITS} digits"


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
        message = _why_not_json(exc)
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
        self, context: Context, operation: str, variables: dict[str, Any]
    ) -> ExecutionResult:
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
        context = await self.view.get_context(request, Response())
        # A caller refused the operation by role is answered so before its body is checked.
        if not refusals_before_coercion(self.operations.document, operation, context):
            problems = variable_problems(
                self.graphql_schema, self.operations.definition(operation), variables
            )
            if problems:
                return variable_errors_response(problems, roots or {"input": []}, rename or {})
        result = await self.execute(context, operation, variables)
        if result.errors:
            return graphql_errors_response(result.errors, self.request_id(request))
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
        if "team" in params:
            filter_["team"] = params["team"]
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

    # assets ---------------------------------------------------------------------------------

    async def list_assets(self, request: Request) -> Response:
        data = await self.run(request, "RestListAssets", {})
        if isinstance(data, Response):
            return data
        return JSONResponse({"assets": data["assets"]})

    async def get_asset(self, request: Request) -> Response:
        name = request.path_params["name"]
        params = request.query_params
        first = 100
        if "first" in params:
            raw = params["first"]
            if not re.fullmatch(r"[0-9]{1,4}", raw) or not 1 <= int(raw) <= MAX_ASSET_PAGE:
                message = f"`first` must be an integer from 1 to {MAX_ASSET_PAGE}"
                return errors_response([error("INVALID_ARGUMENT", message, ["first"])], 422)
            first = int(raw)
        variables = {"name": name, "first": first + 1, "after": params.get("after")}
        data = await self.run(
            request,
            "RestGetAsset",
            variables,
            roots={"name": ["name"], "first": ["first"], "after": ["after"]},
        )
        if isinstance(data, Response):
            return data
        asset = data["asset"]
        if asset is None:
            message = f"no asset named {name!r}"
            return errors_response([error("ASSET_NOT_FOUND", message, ["name"])], 404)
        statuses = asset["latestStatuses"]
        more = len(statuses) > first
        asset["latestStatuses"] = statuses[:first]
        end = statuses[first - 1]["key"] if more else None
        return JSONResponse({**asset, "pageInfo": {"hasNextPage": more, "endCursor": end}})

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
    def graphql_schema(self) -> GraphQLSchema:
        """The executable schema (with the real scalars) that the variables are checked on."""
        return cast(strawberry.Schema, self.view.schema)._schema

    @cached_property
    def document(self) -> dict[str, Any]:
        return build_openapi(
            self.view.schema.as_str(), self.operations.document, self.max_page_size
        )

    def app(self) -> Starlette:
        routes = [
            Route("/openapi.json", self.openapi, methods=["GET"]),
            Route("/backfills", self.list_or_launch, methods=["GET", "POST"]),
            Route("/backfills:preview", self.preview, methods=["POST"]),
            Route("/backfills/{id}", self.get, methods=["GET"]),
            Route("/assets", self.list_assets, methods=["GET"]),
            Route("/assets/{name}", self.get_asset, methods=["GET"]),
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
                "/backfills/{id}/update",
                self.steer("RestUpdateBackfill", "updateBackfill", 200),
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


__all__ = ["PREFIX", "RestApi", "load_operations"]
