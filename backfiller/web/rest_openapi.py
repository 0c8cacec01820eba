"""The OpenAPI 3.1 document of the REST endpoint, derived from its operations and the schema.

The routes are a table (:data:`ROUTES`): one row per path and method, naming the components
of its body and answer. The component schemas come from the GraphQL types and the REST
operations (:class:`backfiller.web.openapi.SchemaBuilder`), so the document cannot drift from
what the routes run.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import graphql
from graphql import DocumentNode, GraphQLInputObjectType

from backfiller.web.openapi import JsonSchema, SchemaBuilder, nullable, ref

PREFIX = "/api/v1"
JSON_MEDIA = "application/json"
# Latest partition statuses of an asset per page (one more is read to know if more follow).
MAX_ASSET_PAGE = 999

# Codes of the REST transport itself, beside the GraphQL ``UserErrorCode`` values.
REST_ONLY_CODES = (
    "MALFORMED_JSON",
    "UNSUPPORTED_MEDIA_TYPE",
    "METHOD_NOT_ALLOWED",
    "INTERNAL_ERROR",
)

ERROR_DESCRIPTIONS = {
    400: "The body is not JSON (`MALFORMED_JSON`).",
    401: "No valid token (`UNAUTHENTICATED`).",
    403: "The token's role does not allow this (`FORBIDDEN`).",
    404: "No backfill has this id (`BACKFILL_NOT_FOUND`), or no asset this name "
    "(`ASSET_NOT_FOUND`).",
    409: "The backfill's status does not allow this (`INVALID_STATE`).",
    415: "The body is not `application/json` (`UNSUPPORTED_MEDIA_TYPE`).",
    422: "The request was refused: the `userErrors` of the GraphQL API, or "
    "`INVALID_ARGUMENT` for a value of the wrong shape or an unknown field.",
    429: "Too many requests (`RATE_LIMITED`).",
}

AUTH = (401, 403, 429)
WITH_BODY = (400, 415, 422, *AUTH)

EXAMPLE_LAUNCH = {
    "target": {"job": "daily_sales"},
    "partitions": {"range": {"start": "2024-01-01", "end": "2024-01-07"}},
    "title": "First week of 2024",
    "tags": [{"key": "ticket", "value": "DATA-42"}],
}


@dataclass(frozen=True, slots=True)
class RouteDoc:
    """One path and method of the REST API, as the document describes it.

    ``body`` and ``answer`` name components (``answer=None``: any JSON object);
    ``parameters`` name entries of :func:`parameters`.
    """

    path: str
    method: str
    operation_id: str
    summary: str
    status: int
    answer_description: str
    answer: str | None
    errors: tuple[int, ...]
    parameters: tuple[str, ...] = ()
    body: str | None = None
    body_required: bool = False
    location: bool = False


def _steer(verb: str, summary: str, status: int, body: str) -> RouteDoc:
    created = status == 201
    return RouteDoc(
        path=f"/backfills/{{id}}/{verb}",
        method="post",
        operation_id=f"{verb}Backfill",
        summary=summary,
        status=status,
        answer_description="The new backfill." if created else "The backfill after the change.",
        answer="Backfill",
        errors=(404, 409, *WITH_BODY),
        parameters=("id",),
        body=body,
        location=created,
    )


ROUTES: tuple[RouteDoc, ...] = (
    RouteDoc(
        "/backfills",
        "get",
        "listBackfills",
        "Backfills of every job, newest first.",
        200,
        "One page of backfills.",
        "BackfillPage",
        (422, *AUTH),
        parameters=("first", "after", "status", "job", "tag", "team"),
    ),
    RouteDoc(
        "/backfills",
        "post",
        "launchBackfill",
        "Launch a backfill (the fields of GraphQL's `LaunchBackfillInput`).",
        201,
        "The backfill (also for a repeated idempotency key).",
        "Backfill",
        WITH_BODY,
        body="LaunchBackfillInput",
        body_required=True,
        location=True,
    ),
    RouteDoc(
        "/backfills:preview",
        "post",
        "previewBackfill",
        "What launching would do. Writes nothing.",
        200,
        "The preview.",
        "BackfillPreview",
        WITH_BODY,
        body="LaunchBackfillInput",
        body_required=True,
    ),
    RouteDoc(
        "/backfills/{id}",
        "get",
        "getBackfill",
        "One backfill, with its partitions folded into status ranges.",
        200,
        "The backfill.",
        "BackfillDetail",
        (404, 422, *AUTH),
        parameters=("id",),
    ),
    RouteDoc(
        "/assets",
        "get",
        "listAssets",
        "Every asset of the graph, in dependency order.",
        200,
        "The assets.",
        "AssetList",
        AUTH,
    ),
    RouteDoc(
        "/assets/{name}",
        "get",
        "getAsset",
        "One asset, with one page of its partitions' latest statuses, by key.",
        200,
        "The asset.",
        "AssetDetail",
        (404, 422, *AUTH),
        parameters=("name", "assetFirst", "assetAfter"),
    ),
    _steer("pause", "Stop launching new runs; runs in flight finish.", 200, "EmptyBody"),
    _steer("resume", "Continue a paused backfill.", 200, "EmptyBody"),
    _steer("cancel", "Stop launching runs and stop the runs in flight.", 200, "EmptyBody"),
    _steer(
        "update",
        "Change the concurrency, priority, title or description of a backfill that is not "
        "finished (the fields of GraphQL's `UpdateBackfillInput`).",
        200,
        "UpdateBackfillBody",
    ),
    _steer(
        "retry",
        "Launch the chosen partitions of a finished backfill again, as its child.",
        201,
        "RetryBackfillBody",
    ),
    RouteDoc(
        "/openapi.json", "get", "getOpenApi", "This document.", 200, "OpenAPI 3.1.", None, AUTH
    ),
)


def parameters(max_page_size: int) -> dict[str, dict[str, Any]]:
    """The path and query parameters the routes name."""

    def query(name: str, description: str, schema: JsonSchema, **extra: Any) -> dict[str, Any]:
        return {"name": name, "in": "query", "description": description, "schema": schema, **extra}

    return {
        "id": {
            "name": "id",
            "in": "path",
            "required": True,
            "description": "The backfill's opaque id.",
            "schema": {"type": "string"},
        },
        "first": query(
            "first",
            f"Page size, at most {max_page_size}.",
            {"type": "integer", "minimum": 0, "maximum": max_page_size},
        ),
        "after": query("after", "`pageInfo.endCursor` of the previous page.", {"type": "string"}),
        "name": {
            "name": "name",
            "in": "path",
            "required": True,
            "description": "The asset's name.",
            "schema": {"type": "string"},
        },
        "assetFirst": query(
            "first",
            f"How many partition statuses, at most {MAX_ASSET_PAGE} (100 by default).",
            {"type": "integer", "minimum": 1, "maximum": MAX_ASSET_PAGE},
        ),
        "assetAfter": query(
            "after", "`pageInfo.endCursor` of the previous page (a key).", {"type": "string"}
        ),
        "status": query(
            "status",
            "Only backfills in these statuses.",
            {"type": "array", "items": ref("BackfillStatus")},
            style="form",
            explode=True,
        ),
        "job": query("job", "Only backfills of this job.", {"type": "string"}),
        "team": query("team", "Only backfills that act for this team.", {"type": "string"}),
        "tag": query(
            "tag",
            "Only backfills with this tag, as `key=value`.",
            {"type": "string", "pattern": "^[^=]*=.*$"},
        ),
    }


def _response(description: str, schema: JsonSchema, **extra: Any) -> dict[str, Any]:
    return {"description": description, "content": {JSON_MEDIA: {"schema": schema}}, **extra}


def _errors(statuses: tuple[int, ...]) -> dict[str, Any]:
    out = {str(s): _response(ERROR_DESCRIPTIONS[s], ref("ErrorBody")) for s in statuses}
    if 400 in statuses:
        out["413"] = _response("The body is over the server's limit.", ref("TooLargeBody"))
    return out


def _operation(route: RouteDoc, params: dict[str, Any], launch_input: JsonSchema) -> Any:
    answer = ref(route.answer) if route.answer is not None else {"type": "object"}
    headers = {}
    if route.location:
        location = {"description": "The URL of the new backfill.", "schema": {"type": "string"}}
        headers = {"headers": {"Location": location}}
    described: dict[str, Any] = {"operationId": route.operation_id, "summary": route.summary}
    if route.parameters:
        described["parameters"] = [params[p] for p in route.parameters]
    if route.body == "LaunchBackfillInput":  # inline, with an example
        media = {"schema": launch_input, "example": EXAMPLE_LAUNCH}
        described["requestBody"] = {"required": True, "content": {JSON_MEDIA: media}}
    elif route.body is not None:
        body = {"schema": ref(route.body)}
        described["requestBody"] = {"required": route.body_required, "content": {JSON_MEDIA: body}}
    described["responses"] = {
        str(route.status): _response(route.answer_description, answer, **headers),
        **_errors(route.errors),
    }
    return described


def _input_object(schema: graphql.GraphQLSchema, name: str) -> GraphQLInputObjectType:
    found = schema.get_type(name)
    assert isinstance(found, GraphQLInputObjectType)
    return found


def _components(
    builder: SchemaBuilder, gql: graphql.GraphQLSchema, doc: DocumentNode
) -> JsonSchema:
    """Add the component schemas the routes name; returns the launch body's schema."""
    components = builder.components
    launch_input = builder.input_type(
        graphql.GraphQLNonNull(_input_object(gql, "LaunchBackfillInput"))
    )
    components["RetryBackfillBody"] = builder.input_object(
        _input_object(gql, "RetryBackfillInput"), omit=frozenset({"id"})
    )
    components["UpdateBackfillBody"] = builder.input_object(
        _input_object(gql, "UpdateBackfillInput"), omit=frozenset({"id"})
    )
    components["EmptyBody"] = builder.input_object(
        _input_object(gql, "PauseBackfillInput"), omit=frozenset({"id"})
    )
    components["BackfillDetail"] = builder.operation_field(doc, "RestGetBackfill", ["backfill"])
    components["BackfillPreview"] = builder.operation_field(
        doc, "RestPreviewBackfill", ["previewBackfill", "preview"]
    )
    page_info = builder.operation_field(doc, "RestListBackfills", ["backfills", "pageInfo"])
    components["BackfillPage"] = {
        "type": "object",
        "properties": {
            "backfills": {"type": "array", "items": ref("Backfill")},
            "pageInfo": page_info,
        },
        "required": ["backfills", "pageInfo"],
    }
    _asset_components(builder, doc, page_info)
    _error_components(builder, gql)
    return launch_input


def _asset_components(builder: SchemaBuilder, doc: DocumentNode, page_info: JsonSchema) -> None:
    """The asset routes' answers: the graph, and one asset with a page of its partitions."""
    components = builder.components
    builder.name_fragment("RestAsset", "Asset")
    components["AssetList"] = {
        "type": "object",
        "properties": {"assets": {"type": "array", "items": ref("Asset")}},
        "required": ["assets"],
    }
    detail = builder.operation_field(doc, "RestGetAsset", ["asset"])
    components["AssetDetail"] = {
        "allOf": [
            detail.get("anyOf", [detail])[0],
            {"type": "object", "properties": {"pageInfo": page_info}, "required": ["pageInfo"]},
        ]
    }


def _error_components(builder: SchemaBuilder, gql: graphql.GraphQLSchema) -> None:
    """The error bodies every route may answer."""
    components = builder.components
    codes = gql.get_type("UserErrorCode")
    assert isinstance(codes, graphql.GraphQLEnumType)
    components["ErrorCode"] = {
        "description": "A `UserErrorCode` of the GraphQL API, or a code of the REST transport.",
        "anyOf": [builder.enum(codes), {"type": "string", "enum": list(REST_ONLY_CODES)}],
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


def build_openapi(sdl: str, document: DocumentNode, max_page_size: int) -> dict[str, Any]:
    """The OpenAPI 3.1 document of the REST routes, derived from the contract."""
    gql = graphql.build_schema(sdl)
    builder = SchemaBuilder(gql, document)
    builder.name_fragment("RestBackfill", "Backfill")
    launch_input = _components(builder, gql, document)
    params = parameters(max_page_size)
    paths: dict[str, dict[str, Any]] = {}
    for route in ROUTES:
        described = _operation(route, params, launch_input)
        paths.setdefault(f"{PREFIX}{route.path}", {})[route.method] = described
    components = builder.components
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


__all__ = ["MAX_ASSET_PAGE", "PREFIX", "REST_ONLY_CODES", "ROUTES", "RouteDoc", "build_openapi"]
