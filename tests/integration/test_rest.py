"""The REST endpoint (/api/v1) over the ASGI app, on the real database.

Every answer is also checked against the OpenAPI document the server publishes, and the
answers are compared with what the GraphQL API says for the same input: REST is a shape over
the same resolvers, never a second implementation.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import AsyncIterator
from datetime import UTC, datetime
from typing import Any

import httpx
import pytest
from jsonschema import Draft202012Validator

from backfiller.config import AuthMode, Settings
from backfiller.daemon.ticks import DaemonState
from backfiller.definitions.loading import Definitions
from backfiller.domain.roles import Role
from backfiller.launchers import InlineLauncher
from backfiller.storage import Database
from backfiller.storage.auth import NewToken, TokenRepository
from backfiller.storage.records import BackfillRecord
from backfiller.web.app import create_app
from backfiller.web.rest import PREFIX, RestApi, load_operations
from tests.integration.test_daemon_ticks import drive
from tests.support import LAUNCH, FrozenClock, GraphQLRunner, count_rows

BODY: dict[str, Any] = {
    "target": {"job": "daily_sales"},
    "partitions": {"range": {"start": "2024-01-01", "end": "2024-01-07"}},
    "tags": [{"key": "team", "value": "sales"}],
    "title": "first week",
}


class Rest:
    """An HTTP client of the app that checks every answer against the OpenAPI document."""

    def __init__(self, client: httpx.AsyncClient, document: dict[str, Any]) -> None:
        self.client = client
        self.document = document

    async def request(self, method: str, path: str, **kwargs: Any) -> httpx.Response:
        response = await self.client.request(method, f"{PREFIX}{path}", **kwargs)
        self.check_documented(method, path.split("?")[0], response)
        return response

    def template_of(self, path: str) -> str:
        parts = path.strip("/").split("/")
        for template in self.document["paths"]:
            wanted = template[len(PREFIX) :].strip("/").split("/")
            if len(wanted) == len(parts) and all(
                w == p or (w.startswith("{") and w.endswith("}"))
                for w, p in zip(wanted, parts, strict=True)
            ):
                return str(template)
        raise AssertionError(f"{path} is not in the OpenAPI document")

    def check_documented(self, method: str, path: str, response: httpx.Response) -> None:
        template = self.template_of(path)
        operation = self.document["paths"][template].get(method.lower())
        if operation is None:
            assert response.status_code == 405
            return
        status = str(response.status_code)
        assert status in operation["responses"], f"{method} {template}: undocumented {status}"
        assert response.headers["content-type"] == "application/json"
        pointer = "/".join(
            part.replace("~", "~0").replace("/", "~1")
            for part in [
                "#",
                "paths",
                template,
                method.lower(),
                "responses",
                status,
                "content",
                "application/json",
                "schema",
            ]
        )
        schema = {"$ref": pointer, **{k: self.document[k] for k in ("paths", "components")}}
        Draft202012Validator(schema).validate(response.json())

    async def get(self, path: str, **kwargs: Any) -> httpx.Response:
        return await self.request("GET", path, **kwargs)

    async def post(self, path: str, **kwargs: Any) -> httpx.Response:
        return await self.request("POST", path, **kwargs)


@pytest.fixture
def settings() -> Settings:
    """Auth off (loopback): the routes' auth is the GraphQL API's, tested with it."""
    return Settings(auth_mode=AuthMode.NONE)


@pytest.fixture
async def rest(gql: GraphQLRunner) -> AsyncIterator[Rest]:
    app = create_app(gql.services)
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1") as client:
        document = (await client.get(f"{PREFIX}/openapi.json")).json()
        yield Rest(client, document)


def user_errors(response: httpx.Response) -> list[dict[str, Any]]:
    errors: list[dict[str, Any]] = response.json()["userErrors"]
    return errors


async def graphql_backfill(gql: GraphQLRunner, backfill_id: str) -> dict[str, Any]:
    text = load_operations().texts["RestGetBackfill"]
    data = await gql(text, {"id": backfill_id})
    backfill: dict[str, Any] = data["backfill"]
    return backfill


async def launch(rest: Rest, **changes: Any) -> dict[str, Any]:
    response = await rest.post("/backfills", json={**BODY, **changes})
    assert response.status_code == 201, response.text
    body: dict[str, Any] = response.json()
    return body


# -- the document ----------------------------------------------------------------------------


def test_the_document_is_openapi_3_1_and_lists_exactly_the_served_routes() -> None:
    document = RestApiDocument.build()
    assert document["openapi"] == "3.1.0"
    for schema in document["components"]["schemas"].values():
        Draft202012Validator.check_schema(schema)
    served = set()
    for route in RestApiDocument.routes():
        for method in route.methods or ():
            if method != "HEAD":
                served.add((method.lower(), PREFIX + route.path))
    documented = {(method, path) for path, item in document["paths"].items() for method in item}
    assert served == documented


class RestApiDocument:
    """Build the document and the routes without a server."""

    @staticmethod
    def build() -> dict[str, Any]:
        from backfiller.api import build_schema
        from backfiller.web.rest_openapi import build_openapi

        return build_openapi(build_schema().as_str(), load_operations().document, 100)

    @staticmethod
    def routes() -> list[Any]:
        from strawberry.asgi import GraphQL

        from backfiller.api import build_schema

        api = RestApi(GraphQL(build_schema()), 100)
        return list(api.app().routes)


async def test_the_document_is_served(rest: Rest) -> None:
    response = await rest.get("/openapi.json")
    assert response.status_code == 200
    assert response.json()["paths"].keys() == RestApiDocument.build()["paths"].keys()


# -- launch ----------------------------------------------------------------------------------


async def test_launch_answers_201_with_the_backfill_graphql_would_show(
    rest: Rest, gql: GraphQLRunner
) -> None:
    response = await rest.post("/backfills", json=BODY)
    assert response.status_code == 201
    backfill = response.json()
    assert response.headers["location"] == f"{PREFIX}/backfills/{backfill['id']}"
    assert backfill["status"] == "REQUESTED"
    assert backfill["counts"]["total"] == 7
    assert backfill["tags"] == [{"key": "team", "value": "sales"}]
    from_graphql = await graphql_backfill(gql, backfill["id"])
    from_graphql.pop("partitionStatusRanges")
    assert from_graphql.pop("assets") == []  # per asset, for an asset backfill
    assert backfill == from_graphql


@pytest.mark.parametrize(
    "body",
    [
        {"target": {"job": "nope"}, "partitions": {"all": True}},
        {"target": {"job": "daily_sales"}, "partitions": {"keys": []}},
        {"target": {"job": "daily_sales"}, "partitions": {"all": False}},
        {"target": {"job": "daily_sales"}, "partitions": {"range": {"start": "x", "end": "y"}}},
        {"target": {"job": "region_report"}, "partitions": {"all": True}, "runConfig": {"a": 1}},
        {**BODY, "maxConcurrentRuns": 0},
        {**BODY, "title": "x" * 10_000},
        {**BODY, "title": "nul \x00 and lone \ud800 surrogate"},
    ],
    ids=["job", "empty", "all-false", "bad-range", "run-config", "concurrency", "title", "nul"],
)
async def test_refused_launch_is_422_with_the_same_user_errors_as_graphql(
    rest: Rest, gql: GraphQLRunner, body: dict[str, Any]
) -> None:
    content = json.dumps(body)  # ASCII escapes: a lone surrogate travels as \ud800
    response = await rest.post(
        "/backfills", content=content, headers={"content-type": "application/json"}
    )
    assert response.status_code == 422
    expected = (await gql(LAUNCH, {"input": body}))["launchBackfill"]["userErrors"]
    assert expected
    assert user_errors(response) == expected
    assert await count_rows(gql.database, BackfillRecord) == 0


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({**BODY, "colour": "red"}, ["colour"]),
        ({**BODY, "target": {"job": "daily_sales", "asset": "x"}}, ["target", "asset"]),
        ({**BODY, "tags": [{"key": 1, "value": "v"}]}, ["tags", "0", "key"]),
        ({**BODY, "order": "SIDEWAYS"}, ["order"]),
        ({**BODY, "maxConcurrentRuns": 2**40}, ["maxConcurrentRuns"]),
        ({"partitions": {"all": True}}, None),
    ],
    ids=["unknown", "unknown-nested", "wrong-type", "bad-enum", "too-big-int", "missing"],
)
async def test_a_body_of_the_wrong_shape_is_422_invalid_argument(
    rest: Rest, gql: GraphQLRunner, body: dict[str, Any], field: list[str] | None
) -> None:
    response = await rest.post("/backfills", json=body)
    assert response.status_code == 422
    errors = user_errors(response)
    assert {e["code"] for e in errors} == {"INVALID_ARGUMENT"}
    if field is not None:
        assert field in [e["field"] for e in errors]
    assert await count_rows(gql.database, BackfillRecord) == 0


async def test_one_of_inputs_take_exactly_one_field(rest: Rest) -> None:
    both = {**BODY, "partitions": {"all": True, "keys": ["2024-01-01"]}}
    response = await rest.post("/backfills", json=both)
    assert response.status_code == 422
    assert "exactly one key" in user_errors(response)[0]["message"]


@pytest.mark.parametrize(
    ("content", "content_type", "status", "code"),
    [
        (b"{not json", "application/json", 400, "MALFORMED_JSON"),
        (b"", "application/json", 400, "MALFORMED_JSON"),
        (b'{"a": NaN}', "application/json", 400, "MALFORMED_JSON"),
        (b"\xff\xfe\x00", "application/json", 400, "MALFORMED_JSON"),
        (b"[" * 100_000, "application/json", 400, "MALFORMED_JSON"),
        (b"[1, 2]", "application/json", 422, "INVALID_ARGUMENT"),
        (b'"launch"', "application/json", 422, "INVALID_ARGUMENT"),
        (b"{}", "text/plain", 415, "UNSUPPORTED_MEDIA_TYPE"),
        (b"{}", "", 415, "UNSUPPORTED_MEDIA_TYPE"),
        (b"target=daily_sales", "application/x-www-form-urlencoded", 415, "UNSUPPORTED_MEDIA_TYPE"),
    ],
    ids=[
        "syntax",
        "empty",
        "nan",
        "not-utf8",
        "too-deep",
        "array",
        "string",
        "text",
        "no-type",
        "form",
    ],
)
async def test_bodies_that_are_not_a_json_object(
    rest: Rest, content: bytes, content_type: str, status: int, code: str
) -> None:
    headers = {"content-type": content_type} if content_type else {}
    for path in ("/backfills", "/backfills:preview"):
        response = await rest.post(path, content=content, headers=headers)
        assert response.status_code == status
        assert [e["code"] for e in user_errors(response)] == [code]


async def test_a_json_suffix_media_type_and_a_charset_are_accepted(rest: Rest) -> None:
    for content_type in ("application/json; charset=utf-8", "application/vnd.backfiller+json"):
        response = await rest.post(
            "/backfills:preview", content=json.dumps(BODY), headers={"content-type": content_type}
        )
        assert response.status_code == 200


async def test_a_body_over_the_limit_is_413(rest: Rest) -> None:
    huge = {**BODY, "description": "x" * (2 * 1024 * 1024)}
    response = await rest.client.post(f"{PREFIX}/backfills", json=huge)
    assert response.status_code == 413
    rest.check_documented("POST", "/backfills", response)


async def test_an_idempotency_key_gives_the_first_backfill_and_refuses_another_input(
    rest: Rest, gql: GraphQLRunner
) -> None:
    first = await launch(rest, idempotencyKey="k-1")
    again = await launch(rest, idempotencyKey="k-1")
    assert again["id"] == first["id"]
    other = await rest.post("/backfills", json={**BODY, "title": "other", "idempotencyKey": "k-1"})
    assert other.status_code == 422
    assert [e["code"] for e in user_errors(other)] == ["IDEMPOTENCY_KEY_REUSED"]
    assert await count_rows(gql.database, BackfillRecord) == 1


# -- preview ---------------------------------------------------------------------------------


async def test_preview_answers_what_would_run_and_writes_nothing(
    rest: Rest, gql: GraphQLRunner
) -> None:
    response = await rest.post("/backfills:preview", json=BODY)
    assert response.status_code == 200
    preview = response.json()
    assert preview["job"] == "daily_sales"
    assert preview["total"] == preview["runs"] == 7
    assert preview["firstPartitions"][0] == "2024-01-01"
    refused = await rest.post("/backfills:preview", json={**BODY, "target": {"job": "nope"}})
    assert refused.status_code == 422
    assert [e["code"] for e in user_errors(refused)] == ["JOB_NOT_FOUND"]
    assert await count_rows(gql.database, BackfillRecord) == 0


# -- list and get ----------------------------------------------------------------------------


async def test_list_pages_with_the_end_cursor_newest_first(rest: Rest) -> None:
    ids = [(await launch(rest, title=f"b{i}"))["id"] for i in range(5)]
    seen: list[str] = []
    after: str | None = None
    while True:
        params: dict[str, Any] = {"first": 2, **({"after": after} if after else {})}
        response = await rest.get("/backfills", params=params)
        assert response.status_code == 200
        page = response.json()
        seen += [b["id"] for b in page["backfills"]]
        if not page["pageInfo"]["hasNextPage"]:
            break
        after = page["pageInfo"]["endCursor"]
    assert seen == list(reversed(ids))
    default = await rest.get("/backfills")
    assert [b["id"] for b in default.json()["backfills"]] == list(reversed(ids))


async def test_list_filters_by_status_job_and_tag(rest: Rest) -> None:
    sales = await launch(rest)
    hourly = await launch(
        rest,
        target={"job": "hourly_events"},
        partitions={"keys": ["2026-01-01-00:00"]},
        tags=[{"key": "team", "value": "events"}],
    )
    paused = await rest.post(f"/backfills/{sales['id']}/pause")
    assert paused.status_code == 200

    async def ids(**params: Any) -> list[str]:
        response = await rest.get("/backfills", params=params)
        assert response.status_code == 200, response.text
        return [b["id"] for b in response.json()["backfills"]]

    assert await ids(job="hourly_events") == [hourly["id"]]
    assert await ids(tag="team=sales") == [sales["id"]]
    assert await ids(status="PAUSED") == [sales["id"]]
    assert await ids(status=["PAUSED", "REQUESTED"]) == [hourly["id"], sales["id"]]
    assert await ids(status="RUNNING") == []
    assert await ids(job="hourly_events", tag="team=sales") == []


@pytest.mark.parametrize(
    ("params", "field"),
    [
        ({"first": "ten"}, ["first"]),
        ({"first": "1000"}, None),
        ({"first": "-1"}, None),
        ({"first": str(2**40)}, ["first"]),
        ({"after": "not-a-cursor"}, None),
        ({"status": "DONE"}, ["status"]),
        ({"tag": "no-equals-sign"}, ["tag"]),
        ({"job": "nul\x00"}, None),
    ],
    ids=[
        "first-text",
        "first-big",
        "first-negative",
        "first-huge",
        "cursor",
        "status",
        "tag",
        "nul",
    ],
)
async def test_bad_list_parameters_are_422(
    rest: Rest, params: dict[str, str], field: list[str] | None
) -> None:
    response = await rest.get("/backfills", params=params)
    assert response.status_code == 422
    errors = user_errors(response)
    assert [e["code"] for e in errors] == ["INVALID_ARGUMENT"]
    assert errors[0]["field"] == field


async def test_get_answers_the_backfill_with_its_status_ranges(
    rest: Rest, gql: GraphQLRunner
) -> None:
    launched = await launch(rest)
    response = await rest.get(f"/backfills/{launched['id']}")
    assert response.status_code == 200
    backfill = response.json()
    assert backfill == await graphql_backfill(gql, launched["id"])
    assert backfill["partitionStatusRanges"] == [
        {
            "status": "PENDING",
            "startKey": "2024-01-01",
            "endKey": "2024-01-07",
            "startIndex": 0,
            "count": 7,
        }
    ]


@pytest.mark.parametrize("backfill_id", ["bf_999", "nonsense", "run_1", "bf_" + "9" * 40, "é"])
async def test_an_unknown_id_is_404_backfill_not_found(rest: Rest, backfill_id: str) -> None:
    response = await rest.get(f"/backfills/{backfill_id}")
    assert response.status_code == 404
    assert user_errors(response) == [
        {
            "field": ["id"],
            "message": f"no backfill has id {backfill_id!r}",
            "code": "BACKFILL_NOT_FOUND",
        }
    ]
    for verb in ("pause", "resume", "cancel", "retry"):
        steered = await rest.post(f"/backfills/{backfill_id}/{verb}")
        assert steered.status_code == 404
        assert [e["code"] for e in user_errors(steered)] == ["BACKFILL_NOT_FOUND"]


# -- steering --------------------------------------------------------------------------------


async def test_pause_resume_cancel_and_retry(rest: Rest, gql: GraphQLRunner) -> None:
    launched = await launch(rest)
    path = f"/backfills/{launched['id']}"
    paused = await rest.post(f"{path}/pause")
    assert (paused.status_code, paused.json()["status"]) == (200, "PAUSED")
    resumed = await rest.post(f"{path}/resume", json={})
    assert (resumed.status_code, resumed.json()["status"]) == (200, "REQUESTED")
    early = await rest.post(f"{path}/retry")
    assert early.status_code == 409
    assert [e["code"] for e in user_errors(early)] == ["INVALID_STATE"]
    canceled = await rest.post(f"{path}/cancel")
    assert (canceled.status_code, canceled.json()["status"]) == (200, "CANCELED")
    again = await rest.post(f"{path}/pause")
    assert again.status_code == 409
    assert [e["code"] for e in user_errors(again)] == ["INVALID_STATE"]

    nothing_failed = await rest.post(f"{path}/retry", json={"include": ["FAILED"]})
    assert nothing_failed.status_code == 422
    assert [e["code"] for e in user_errors(nothing_failed)] == ["EMPTY_SELECTION"]
    retried = await rest.post(
        f"{path}/retry", json={"include": ["NOT_RUN", "CANCELED"], "idempotencyKey": "r-1"}
    )
    assert retried.status_code == 201
    child = retried.json()
    assert child["parent"] == {"id": launched["id"]}
    assert child["counts"]["total"] == 7
    assert retried.headers["location"] == f"{PREFIX}/backfills/{child['id']}"
    assert child == {
        k: v
        for k, v in (await graphql_backfill(gql, child["id"])).items()
        if k not in ("partitionStatusRanges", "assets")
    }


@pytest.mark.parametrize(
    ("kwargs", "status", "code"),
    [
        ({"json": {"id": "bf_2"}}, 422, "INVALID_ARGUMENT"),
        ({"json": {"reason": "x"}}, 422, "INVALID_ARGUMENT"),
        ({"content": b"{", "headers": {"content-type": "application/json"}}, 400, "MALFORMED_JSON"),
        (
            {"content": b"{}", "headers": {"content-type": "text/plain"}},
            415,
            "UNSUPPORTED_MEDIA_TYPE",
        ),
    ],
    ids=["id-in-body", "unknown-field", "malformed", "media-type"],
)
async def test_bad_steering_bodies(
    rest: Rest, kwargs: dict[str, Any], status: int, code: str
) -> None:
    launched = await launch(rest)
    for verb in ("pause", "cancel"):
        response = await rest.post(f"/backfills/{launched['id']}/{verb}", **kwargs)
        assert response.status_code == status
        assert [e["code"] for e in user_errors(response)] == [code]
    unchanged = await rest.get(f"/backfills/{launched['id']}")
    assert unchanged.json()["status"] == "REQUESTED"


async def test_retry_with_an_unknown_include_is_422(rest: Rest) -> None:
    launched = await launch(rest)
    await rest.post(f"/backfills/{launched['id']}/cancel")
    response = await rest.post(f"/backfills/{launched['id']}/retry", json={"include": ["ALL"]})
    assert response.status_code == 422
    assert user_errors(response)[0]["field"] == ["include", "0"]


# -- transport -------------------------------------------------------------------------------


async def test_wrong_method_is_405_with_allow_and_unknown_route_is_404(rest: Rest) -> None:
    response = await rest.request("DELETE", "/backfills")
    assert response.status_code == 405
    assert set(response.headers["allow"].split(", ")) >= {"GET", "POST"}
    assert [e["code"] for e in user_errors(response)] == ["METHOD_NOT_ALLOWED"]
    missing = await rest.client.get(f"{PREFIX}/jobs")
    assert missing.status_code == 404
    assert [e["code"] for e in missing.json()["userErrors"]] == ["NOT_FOUND"]


async def test_every_answer_carries_a_request_id(rest: Rest) -> None:
    response = await rest.get("/backfills/bf_1")
    assert response.headers["x-request-id"]


# -- auth: the GraphQL API's, through the same context ----------------------------------------


async def add_token(gql: GraphQLRunner, name: str, role: str) -> str:
    async with gql.database.write() as session:
        _record, secret = await TokenRepository(session).add(
            NewToken(name=name, role=Role(role), expires_at=None, created_by="test"),
            datetime.now(UTC),
        )
    return secret


async def test_tokens_are_checked_as_on_graphql(gql: GraphQLRunner) -> None:
    services = dataclasses.replace(
        gql.services, settings=dataclasses.replace(gql.settings, auth_mode=AuthMode.TOKEN)
    )
    operator = await add_token(gql, "ci-nightly", "operator")
    viewer = await add_token(gql, "dashboard", "viewer")
    transport = httpx.ASGITransport(app=create_app(services))

    def bearer(token: str) -> dict[str, str]:
        return {"authorization": f"Bearer {token}"}

    async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1") as client:
        assert (await client.get(f"{PREFIX}/openapi.json")).status_code == 401
        document = (await client.get(f"{PREFIX}/openapi.json", headers=bearer(viewer))).json()
        rest = Rest(client, document)

        for headers in ({}, bearer("bft_not-a-token")):
            for method, path in (("GET", "/backfills"), ("GET", "/backfills/bf_1")):
                response = await rest.request(method, path, headers=headers)
                assert response.status_code == 401
                assert [e["code"] for e in user_errors(response)] == ["UNAUTHENTICATED"]
            refused = await rest.post("/backfills", json=BODY, headers=headers)
            assert refused.status_code == 401
            assert [e["code"] for e in user_errors(refused)] == ["UNAUTHENTICATED"]

        launched = await rest.post("/backfills", json=BODY, headers=bearer(operator))
        assert launched.status_code == 201
        assert launched.json()["creator"] == "ci-nightly"
        path = f"/backfills/{launched.json()['id']}"
        assert (await rest.get(path, headers=bearer(viewer))).status_code == 200
        forbidden = await rest.post(f"{path}/cancel", headers=bearer(viewer))
        assert forbidden.status_code == 403
        assert [e["code"] for e in user_errors(forbidden)] == ["FORBIDDEN"]
        assert (await rest.get(path, headers=bearer(viewer))).json()["status"] == "REQUESTED"


# -- assets ----------------------------------------------------------------------------------

ASSET_BODY: dict[str, Any] = {
    "target": {"assets": {"names": ["raw_events"], "downstream": True}},
    "partitions": {"range": {"start": "2024-02-27", "end": "2024-03-02"}},
}


async def test_an_asset_launch_preview_and_read_per_asset(
    rest: Rest,
    gql: GraphQLRunner,
    database: Database,
    definitions: Definitions,
    clock: FrozenClock,
) -> None:
    preview = await rest.post("/backfills:preview", json=ASSET_BODY)
    assert preview.status_code == 200
    assert [(a["name"], a["total"]) for a in preview.json()["assets"]] == [
        ("raw_events", 5),
        ("daily_visits", 5),
        ("monthly_report", 2),
        ("visits_summary", 1),
    ]
    response = await rest.post("/backfills", json=ASSET_BODY)
    assert response.status_code == 201, response.text
    launched = response.json()
    assert launched["target"]["job"] is None
    assert launched["target"]["assets"]["assets"][-1] == "visits_summary"
    await drive(database, definitions, clock, InlineLauncher(definitions, max_active=8),
                DaemonState(plan_window=7))  # fmt: skip
    detail = (await rest.get(f"/backfills/{launched['id']}")).json()
    assert detail == await graphql_backfill(gql, launched["id"])
    assert [(a["name"], a["level"], a["counts"]["succeeded"]) for a in detail["assets"]] == [
        ("raw_events", 0, 5),
        ("daily_visits", 1, 5),
        ("monthly_report", 2, 2),
        ("visits_summary", 3, 1),
    ]

    listed = await rest.get("/assets")
    assert listed.status_code == 200
    assets = listed.json()["assets"]
    assert [a["name"] for a in assets][:2] == ["raw_events", "daily_visits"]
    assert assets[3]["partitions"] is None and assets[3]["upstream"] == ["monthly_report"]

    first = await rest.get("/assets/raw_events?first=3")
    assert first.status_code == 200
    page = first.json()
    assert page["upstream"] == [] and page["downstream"] == ["daily_visits"]
    assert [p["key"] for p in page["latestStatuses"]] == ["2024-02-27", "2024-02-28", "2024-02-29"]
    assert page["pageInfo"] == {"hasNextPage": True, "endCursor": "2024-02-29"}
    rest_page = (await rest.get("/assets/raw_events", params={"after": "2024-02-29"})).json()
    assert rest_page["latestStatuses"] == [
        {"key": "2024-03-01", "status": "SUCCESS"},
        {"key": "2024-03-02", "status": "SUCCESS"},
    ]
    assert rest_page["pageInfo"] == {"hasNextPage": False, "endCursor": None}


@pytest.mark.parametrize(
    ("body", "code", "field"),
    [
        ({"assets": {"names": ["nope"]}}, "ASSET_NOT_FOUND", ["target", "assets", "names", "0"]),
        ({"assets": {"names": "raw_events", "sideways": True}}, "INVALID_ARGUMENT", None),
        ({"assets": {"upstream": True}}, "INVALID_ARGUMENT", None),
        ({"job": "daily_sales", "assets": {"names": ["raw_events"]}}, "INVALID_ARGUMENT", None),
    ],
    ids=["unknown", "unknown-field", "no-names", "both-targets"],
)
async def test_a_bad_asset_launch_is_422_and_writes_nothing(
    rest: Rest, database: Database, body: dict[str, Any], code: str, field: list[str] | None
) -> None:
    response = await rest.post("/backfills", json={**ASSET_BODY, "target": body})
    assert response.status_code == 422, response.text
    errors = user_errors(response)
    assert errors[0]["code"] == code
    if field is not None:
        assert errors[0]["field"][: len(field) - 1] == field[:-1]
    assert await count_rows(database, BackfillRecord) == 0


@pytest.mark.parametrize(
    ("path", "status", "code"),
    [
        ("/assets/no_such_asset", 404, "ASSET_NOT_FOUND"),
        ("/assets/raw_events?first=0", 422, "INVALID_ARGUMENT"),
        ("/assets/raw_events?first=1000", 422, "INVALID_ARGUMENT"),
        ("/assets/raw_events?first=ten", 422, "INVALID_ARGUMENT"),
    ],
)
async def test_bad_asset_reads_are_typed_4xx(rest: Rest, path: str, status: int, code: str) -> None:
    response = await rest.get(path)
    assert response.status_code == status
    assert [e["code"] for e in user_errors(response)] == [code]
