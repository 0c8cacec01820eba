"""Hostile input against a live server: limits, bombs, huge bodies, odd text, CSRF and CORS,
rate limits and masked internal errors."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from tests.security.conftest import Tokens, bearer, client_of, row_counts, token_server
from tests.security.defs import LEAK
from tests.support import LAUNCH, LiveServer

UI_ORIGIN = "http://ui.example:3000"
CAP = 1000
RATE = 3
PREVIEW = """mutation($input: LaunchBackfillInput!) { previewBackfill(input: $input) {
  preview { total } userErrors { code field message } } }"""


server = token_server(
    extra=[
        "--max-partitions-per-backfill",
        str(CAP),
        "--rate-limit",
        str(RATE),
        "--cors-origin",
        UI_ORIGIN,
    ]
)


def fresh_operator(server: LiveServer, tokens: Tokens, name: str) -> str:
    """A new operator token: its own rate-limit budget."""
    response = post(
        server,
        """mutation($i: CreateApiTokenInput!) { createApiToken(input: $i) {
        secret userErrors { code } } }""",
        {"i": {"name": name, "role": "OPERATOR"}},
        tokens.admin,
    )
    secret: str = response.json()["data"]["createApiToken"]["secret"]
    return secret


def post(
    server: LiveServer,
    query: str,
    variables: dict[str, Any] | None = None,
    token: str | None = None,
    **kwargs: Any,
) -> httpx.Response:
    body = json.dumps({"query": query, "variables": variables or {}})  # ASCII, surrogates escaped
    headers = {"Content-Type": "application/json", **bearer(token), **kwargs.pop("headers", {})}
    return client_of(server).post("/graphql/v1", content=body, headers=headers, **kwargs)


def codes(response: httpx.Response) -> list[str]:
    body = response.json()
    found = [e.get("extensions", {}).get("code") for e in body.get("errors") or []]
    for value in (body.get("data") or {}).values():
        if isinstance(value, dict):
            found += [e["code"] for e in value.get("userErrors") or []]
    return [c for c in found if c]


def daily(**extra: Any) -> dict[str, Any]:
    return {"target": {"job": "daily_sales"}, "partitions": {"keys": ["2024-01-01"]}, **extra}


# -- query shape limits ------------------------------------------------------------------------


def test_deep_wide_and_bomb_queries_are_refused_with_a_code(
    server: LiveServer, tokens: Tokens
) -> None:
    deep = "{ backfills { nodes { " + "parent { " * 14 + "id" + " }" * 14 + " } } }"
    wide = "{ " + " ".join(f"a{i}: apiVersion" for i in range(31)) + " }"
    many_tokens = "{ " + " ".join(["apiVersion"] * 5001) + " }"
    bomb = "query { ...F0 }\n" + "".join(
        f"fragment F{i} on Query {{ ...F{i + 1} ...F{i + 1} }}\n" for i in range(30)
    )
    bomb += "fragment F30 on Query { apiVersion jobs { name } }"
    costly = "{ backfills(first: 100) { nodes { runs(first: 100) { nodes { id } } } } }"
    nested = (
        "{ backfills(first: 100) { nodes { runs(first: 100) { nodes { "
        "logs(first: 100) { nodes { message } } } } } } }"
    )
    for query in (deep, wide, many_tokens, bomb, nested):
        response = post(server, query, token=tokens.viewer, timeout=10)
        assert response.status_code == 200
        assert codes(response) == ["QUERY_TOO_COMPLEX"], (query[:80], response.text[:300])
        assert response.json()["data"] is None
    # Within the limits the same shapes work: 100 x 100 = 10,100 objects at most.
    ok = post(server, costly, token=tokens.viewer)
    assert "errors" not in ok.json(), ok.text
    wide_ok = "{ " + " ".join(f"a{i}: apiVersion" for i in range(30)) + " }"
    assert post(server, wide_ok, token=tokens.viewer).json()["data"]["a29"] == "v1"


def test_the_same_document_is_costed_again_when_its_variables_change(
    server: LiveServer, tokens: Tokens
) -> None:
    """The server remembers a parsed document's cost only when no variable goes into it:
    the same text asks again for as much as its variables say, every time."""
    query = (
        "query Q($outer: Int, $inner: Int) { backfills(first: $outer) { nodes { "
        "runs(first: $inner) { nodes { logs(first: 100) { nodes { message } } } } } } }"
    )
    small, large = {"outer": 2, "inner": 2}, {"outer": 100, "inner": 100}
    for variables in (small, large, small, large):
        response = post(server, query, variables, token=tokens.viewer)
        expected = [] if variables is small else ["QUERY_TOO_COMPLEX"]
        assert codes(response) == expected, (variables, response.text[:300])
    constant = (
        "{ backfills(first: 100) { nodes { runs(first: 100) { nodes { "
        "logs { nodes { message } } } } } } }"
    )
    for _ in range(2):
        assert codes(post(server, constant, token=tokens.viewer)) == ["QUERY_TOO_COMPLEX"]


def test_introspection_still_works_for_tools(server: LiveServer, tokens: Tokens) -> None:
    from graphql import get_introspection_query

    response = post(server, get_introspection_query(), token=tokens.viewer)
    assert "errors" not in response.json()
    assert response.json()["data"]["__schema"]["queryType"]["name"] == "Query"


def test_page_size_is_at_most_100(server: LiveServer, tokens: Tokens) -> None:
    for field in ("backfills", "runs", "apiTokens", "auditLog"):
        token = tokens.admin
        too_big = post(
            server, f"{{ {field}(first: 101) {{ nodes {{ __typename }} }} }}", token=token
        )
        assert codes(too_big) == ["INVALID_ARGUMENT"], field
        negative = post(
            server, f"{{ {field}(first: -1) {{ nodes {{ __typename }} }} }}", token=token
        )
        assert codes(negative) == ["INVALID_ARGUMENT"], field
        ok = post(server, f"{{ {field}(first: 100) {{ nodes {{ __typename }} }} }}", token=token)
        assert "errors" not in ok.json(), field


# -- bodies, content types, methods ----------------------------------------------------------

TEN_MIB = 10 * 1024 * 1024


def test_a_10_mib_body_is_413_whether_announced_or_streamed(
    server: LiveServer, tokens: Tokens, shared_database_url: str
) -> None:
    before = row_counts(shared_database_url)
    padding = "x" * TEN_MIB
    body = json.dumps({"query": LAUNCH, "variables": {"input": daily(title=padding)}})
    announced = client_of(server).post(
        "/graphql/v1",
        content=body.encode(),
        headers={"Content-Type": "application/json", **bearer(tokens.operator)},
    )
    assert announced.status_code == 413
    assert announced.json()["errors"][0]["extensions"]["code"] == "PAYLOAD_TOO_LARGE"

    def chunks() -> Iterator[bytes]:
        data = body.encode()
        for start in range(0, len(data), 64 * 1024):
            yield data[start : start + 64 * 1024]

    streamed = client_of(server).post(
        "/graphql/v1",
        content=chunks(),
        headers={"Content-Type": "application/json", **bearer(tokens.operator)},
    )
    assert streamed.status_code == 413
    assert row_counts(shared_database_url) == before


def test_wrong_content_types_and_mutations_over_get_change_nothing(
    server: LiveServer, tokens: Tokens, shared_database_url: str
) -> None:
    before = row_counts(shared_database_url)
    body = json.dumps({"query": LAUNCH, "variables": {"input": daily()}})
    client = client_of(server)
    for content_type in ("text/plain", "application/x-www-form-urlencoded", "multipart/form-data"):
        response = client.post(
            "/graphql/v1",
            content=body,
            headers={"Content-Type": content_type, **bearer(tokens.operator)},
        )
        assert response.status_code in (400, 415), content_type
    over_get = client.get(
        "/graphql/v1",
        params={"query": LAUNCH, "variables": json.dumps({"input": daily()})},
        headers=bearer(tokens.operator),
    )
    assert over_get.status_code in (400, 405)
    assert row_counts(shared_database_url) == before


def test_json_bodies_of_every_shape_are_read_or_refused_as_strawberry_reads_them(
    server: LiveServer, tokens: Tokens, shared_database_url: str
) -> None:
    """The view reads a plain JSON operation itself (``web/request_body.py``) and hands every
    other shape to strawberry: both paths give the same answers, and no refusal writes."""
    client = client_of(server)

    def send(body: str, content_type: str = "application/json") -> httpx.Response:
        headers = {"Content-Type": content_type, **bearer(tokens.operator)}
        return client.post("/graphql/v1", content=body, headers=headers)

    operation = json.dumps({"query": "query Who { apiVersion }", "operationName": "Who"})
    for content_type in ("application/json", "application/json; charset=utf-8", "Application/JSON"):
        answer = send(operation, content_type)
        if content_type == "Application/JSON":  # strawberry compares the type as written
            assert answer.status_code == 400
            continue
        assert answer.status_code == 200, content_type
        assert answer.json()["data"]["apiVersion"] == "v1"
    before = row_counts(shared_database_url)
    refused = {
        "not json": (send("{nope"), "Unable to parse request body as JSON"),
        "query": (send(json.dumps({"query": 7})), "`query` must be a string or null"),
        "variables": (
            send(json.dumps({"query": LAUNCH, "variables": [daily()]})),
            "`variables` must be an object or null",
        ),
        "extensions": (
            send(json.dumps({"query": LAUNCH, "extensions": "x"})),
            "`extensions` must be an object or null",
        ),
        "batch": (send(json.dumps([{"query": LAUNCH, "variables": {"input": daily()}}])), ""),
        "no query": (send(json.dumps({"variables": {}})), "No GraphQL query found"),
    }
    for shape, (answer, message) in refused.items():
        assert answer.status_code == 400, (shape, answer.text)
        assert message in answer.text, shape
    assert row_counts(shared_database_url) == before


def test_the_graphql_lane_answers_as_the_router_did(server: LiveServer, tokens: Tokens) -> None:
    """GET and POST of /graphql/v1 go straight to the view (``web/graphql_lane.py``); other
    methods and paths still meet Starlette's router, and every answer keeps its headers."""
    client = client_of(server)
    for method in ("PUT", "DELETE", "PATCH"):
        answer = client.request(method, "/graphql/v1", headers=bearer(tokens.operator))
        assert answer.status_code == 405, method
        assert "POST" in answer.headers["allow"]
    over_get = client.get(
        "/graphql/v1", params={"query": "{ apiVersion }"}, headers=bearer(tokens.viewer)
    )
    over_post = post(server, "{ apiVersion }", token=tokens.viewer)
    for answer in (over_get, over_post):
        assert answer.status_code == 200
        assert answer.json() == {"data": {"apiVersion": "v1"}}
        assert len(answer.headers["x-request-id"]) == 32
        assert answer.headers["x-content-type-options"] == "nosniff"
    ide = client.get("/graphql/v1", headers={"Accept": "text/html", **bearer(tokens.viewer)})
    assert ide.status_code == 200 and "graphiql" in ide.text.lower()
    assert client.post("/graphql/v1", headers=bearer(tokens.viewer)).status_code == 400
    slash = client.post("/graphql/v1/", content=b"{}", headers=bearer(tokens.viewer))
    assert slash.status_code == 307  # the router's redirect to the path without the slash
    assert slash.headers["location"] == f"{server.url}/graphql/v1"


# -- CSRF and CORS ---------------------------------------------------------------------------


def test_browser_requests_from_other_origins_are_refused(
    server: LiveServer, tokens: Tokens, shared_database_url: str
) -> None:
    before = row_counts(shared_database_url)
    body = json.dumps({"query": LAUNCH, "variables": {"input": daily()}})
    client = client_of(server)
    evil = client.post(
        "/graphql/v1",
        content=body,
        headers={
            "Content-Type": "application/json",
            "Origin": "http://evil.example",
            **bearer(tokens.operator),
        },
    )
    assert evil.status_code == 403
    # A page of a configured origin, or of this server, must send JSON (a preflighted type).
    form = client.post(
        "/api/v1/backfills/bf_1/cancel",
        content=b"",
        headers={"Content-Type": "text/plain", "Origin": UI_ORIGIN, **bearer(tokens.operator)},
    )
    assert form.status_code == 415
    assert form.json()["userErrors"][0]["code"] == "UNSUPPORTED_MEDIA_TYPE"
    assert row_counts(shared_database_url) == before
    same_origin = client.post(
        "/graphql/v1",
        content=json.dumps({"query": "{ apiVersion }"}),
        headers={"Content-Type": "application/json", "Origin": server.url, **bearer(tokens.viewer)},
    )
    assert same_origin.json() == {"data": {"apiVersion": "v1"}}


def test_cors_answers_only_configured_origins(server: LiveServer) -> None:
    client = client_of(server)

    def preflight(origin: str) -> httpx.Response:
        return client.options(
            "/graphql/v1",
            headers={
                "Origin": origin,
                "Access-Control-Request-Method": "POST",
                "Access-Control-Request-Headers": "authorization, content-type",
            },
        )

    allowed = preflight(UI_ORIGIN)
    assert allowed.status_code == 200
    assert allowed.headers["access-control-allow-origin"] == UI_ORIGIN
    assert "authorization" in allowed.headers["access-control-allow-headers"].lower()
    refused = preflight("http://evil.example")
    assert refused.headers.get("access-control-allow-origin") is None
    # The 401 of a configured origin is readable by its page (so the UI can show sign-in).
    unauthenticated = client.post(
        "/graphql/v1",
        json={"query": "{ apiVersion }"},
        headers={"Origin": UI_ORIGIN},
    )
    assert unauthenticated.status_code == 401
    assert unauthenticated.headers["access-control-allow-origin"] == UI_ORIGIN


def test_websockets_need_a_token_and_an_allowed_origin(server: LiveServer, tokens: Tokens) -> None:
    from websockets.exceptions import ConnectionClosed, InvalidStatus
    from websockets.sync.client import connect

    url = server.url.replace("http", "ws") + "/graphql/v1"
    protocol = ["graphql-transport-ws"]

    def init(payload: dict[str, Any], origin: str | None = None) -> dict[str, Any] | int:
        headers = {"Origin": origin} if origin else None
        try:
            with connect(url, subprotocols=protocol, additional_headers=headers) as ws:  # type: ignore[arg-type]
                ws.send(json.dumps({"type": "connection_init", "payload": payload}))
                answer: dict[str, Any] = json.loads(ws.recv(timeout=10))
                return answer
        except ConnectionClosed as closed:
            return closed.rcvd.code if closed.rcvd else -1
        except InvalidStatus as refused:
            return refused.response.status_code

    assert init({}) == 4403
    assert init({"Authorization": f"Bearer {tokens.revoked}"}) == 4403
    assert init({"Authorization": f"Bearer {tokens.viewer}"}) == {"type": "connection_ack"}
    assert init({"Authorization": f"Bearer {tokens.viewer}"}, "http://evil.example") == 403
    # A page of this server opens its socket with its own http:// origin.
    same_site = init({"Authorization": f"Bearer {tokens.viewer}"}, server.url)
    assert same_site == {"type": "connection_ack"}


# -- launch input ----------------------------------------------------------------------------

ODD_TEXT = [
    "plain",
    "émoji 🎉 and 中文 and עברית",
    "combining e\u0301 and zero\u200bwidth and bidi \u202eoverride",
    "controls \x01\x02\x1b[31m\x7f and tab\tnewline\nreturn\r",
    "  surrounding spaces  ",
    "quote \" backslash \\ apostrophe ' <script>alert(1)</script> ${x} {{y}} %s",
    "\ufeffBOM and \uffff non-character and \U0010ffff last plane",
]


def test_unicode_and_control_characters_read_back_exactly(
    server: LiveServer, tokens: Tokens
) -> None:
    operator = fresh_operator(server, tokens, "odd-text")
    given = daily(
        title=ODD_TEXT[2] + ODD_TEXT[3],
        description="\n".join(ODD_TEXT),
        tags=[
            {"key": f"k{i} {text.strip()[:20]}", "value": text} for i, text in enumerate(ODD_TEXT)
        ],
    )
    response = post(server, LAUNCH, {"input": given}, operator)
    payload = response.json()["data"]["launchBackfill"]
    assert payload["userErrors"] == []
    backfill_id = payload["backfill"]["id"]
    read = post(
        server,
        "query($id: ID!) { backfill(id: $id) { title description tags { key value } } }",
        {"id": backfill_id},
        tokens.viewer,
    ).json()["data"]["backfill"]
    assert read["title"] == given["title"]
    assert read["description"] == given["description"]
    assert read["tags"] == given["tags"]
    # And the tag filter finds it by the odd value.
    found = post(
        server,
        "query($t: TagInput!) { backfills(filter: {tag: $t}) { nodes { id } } }",
        {"t": given["tags"][3]},
        tokens.viewer,
    ).json()["data"]["backfills"]["nodes"]
    assert [n["id"] for n in found] == [backfill_id]


@pytest.mark.parametrize(
    ("where", "value"),
    [
        ("title", "a\x00b"),
        ("description", "\x00"),
        ("tag value", "nul \x00 inside"),
        ("title", "lone \ud800 surrogate"),
        ("tag key", "\udfff"),
        ("idempotency key", "k\x00"),
    ],
)
def test_nul_and_lone_surrogates_are_invalid_arguments(
    server: LiveServer, tokens: Tokens, shared_database_url: str, where: str, value: str
) -> None:
    choices: dict[str, dict[str, Any]] = {
        "title": {"title": value},
        "description": {"description": value},
        "tag value": {"tags": [{"key": "k", "value": value}]},
        "tag key": {"tags": [{"key": value, "value": "v"}]},
        "idempotency key": {"idempotencyKey": value},
    }
    fields = choices[where]
    before = row_counts(shared_database_url, ignore=("audit_log",))
    response = post(server, LAUNCH, {"input": daily(**fields)}, tokens.admin)
    assert response.status_code == 200
    payload = response.json()["data"]["launchBackfill"]
    assert [e["code"] for e in payload["userErrors"]] == ["INVALID_ARGUMENT"]
    assert payload["userErrors"][0]["field"][0] in (
        "title",
        "description",
        "tags",
        "idempotencyKey",
    )
    assert row_counts(shared_database_url, ignore=("audit_log",)) == before


@pytest.mark.parametrize(
    ("partitions", "code"),
    [
        ({"range": {"start": "0001-01-01", "end": "9999-12-31"}}, "INVALID_PARTITION_RANGE"),
        ({"range": {"start": "2024-13-45", "end": "2024-01-02"}}, "INVALID_PARTITION_RANGE"),
        ({"range": {"start": "2024-02-01", "end": "2024-01-01"}}, "INVALID_PARTITION_RANGE"),
        ({"range": {"start": "", "end": ""}}, "INVALID_PARTITION_RANGE"),
        ({"range": {"start": "x" * 100_000, "end": "2024-01-01"}}, "INVALID_PARTITION_RANGE"),
        ({"range": {"start": "2024-01-01", "end": "2099-12-31"}}, "PARTITION_NOT_FOUND"),
        ({"range": {"start": "2024-01-01", "end": "2026-10-31"}}, "RANGE_TOO_LARGE"),
        ({"all": True}, "RANGE_TOO_LARGE"),
        ({"keys": []}, "EMPTY_SELECTION"),
        ({"keys": ["2024-01-01"] * 2}, "INVALID_ARGUMENT"),
        ({"keys": [f"2024-01-{d:02d}" for d in range(1, 32)] + ["bad"]}, "INVALID_PARTITION_RANGE"),
        ({"all": False}, "INVALID_ARGUMENT"),
    ],
)
def test_huge_and_malformed_partition_selections_are_refused(
    server: LiveServer,
    tokens: Tokens,
    shared_database_url: str,
    partitions: dict[str, Any],
    code: str,
) -> None:
    before = row_counts(shared_database_url, ignore=("audit_log",))
    given = {"target": {"job": "daily_sales"}, "partitions": partitions}
    response = post(
        server,
        PREVIEW,
        {"input": given},
        tokens.admin,
    )
    assert response.status_code == 200
    assert codes(response)[:1] == [code], response.text[:400]
    assert row_counts(shared_database_url, ignore=("audit_log",)) == before


def test_the_partition_cap_is_the_flag(server: LiveServer, tokens: Tokens) -> None:
    at_cap = {"range": {"start": "2024-01-01", "end": "2026-09-26"}}  # 1000 days
    over = {"range": {"start": "2024-01-01", "end": "2026-09-27"}}
    preview = """mutation($input: LaunchBackfillInput!) { previewBackfill(input: $input) {
      preview { total } userErrors { code message } } }"""
    ok = post(server, preview, {"input": daily(partitions=at_cap)}, tokens.admin).json()
    assert ok["data"]["previewBackfill"]["preview"]["total"] == CAP
    refused = post(server, preview, {"input": daily(partitions=over)}, tokens.admin).json()
    [error] = refused["data"]["previewBackfill"]["userErrors"]
    assert error["code"] == "RANGE_TOO_LARGE" and str(CAP) in error["message"]


# -- rate limits -----------------------------------------------------------------------------


def test_launches_are_rate_limited_per_token_on_graphql_and_rest(
    server: LiveServer, tokens: Tokens, shared_database_url: str
) -> None:
    token = fresh_operator(server, tokens, "rate-limited")
    results = [
        codes(post(server, LAUNCH, {"input": daily(title=f"r{i}")}, token)) for i in range(RATE + 1)
    ]
    assert results == [[]] * RATE + [["RATE_LIMITED"]]
    before = row_counts(shared_database_url, ignore=("audit_log",))
    rest = client_of(server).post("/api/v1/backfills", json=daily(), headers=bearer(token))
    assert rest.status_code == 429
    assert int(rest.headers["retry-after"]) >= 1
    assert rest.json()["userErrors"][0]["code"] == "RATE_LIMITED"
    assert row_counts(shared_database_url, ignore=("audit_log",)) == before
    # Reads are not limited, and other tokens keep their own budget.
    assert "errors" not in post(server, "{ backfills { nodes { id } } }", token=token).json()
    other = fresh_operator(server, tokens, "rate-limited-2")
    assert codes(post(server, LAUNCH, {"input": daily()}, other)) == []


# -- errors ----------------------------------------------------------------------------------


def test_internal_errors_are_masked_and_carry_the_logged_request_id(
    server: LiveServer, tokens: Tokens
) -> None:
    given = {"target": {"job": "exploding"}, "partitions": {"all": True}}
    response = post(server, LAUNCH, {"input": given}, tokens.admin)
    text = response.text
    assert response.status_code == 200
    [error] = response.json()["errors"]
    assert error["message"] == "Internal server error."
    assert error["extensions"]["code"] == "INTERNAL_ERROR"
    request_id = error["extensions"]["requestId"]
    assert request_id == response.headers["x-request-id"]
    for leak in ("SELECT", "Traceback", "password", "api_tokens", 'File "', ".py"):
        assert leak not in text
    log = server.output()
    assert re.search(rf"unexpected error in request {request_id}", log)
    assert LEAK in log  # the details are in the server log, under that id
    # The failure is audited as FAILED with the request id.
    audit = post(
        server,
        '{ auditLog(first: 5, operation: "launchBackfill") '
        "{ nodes { outcome message requestId } } }",
        token=tokens.admin,
    ).json()["data"]["auditLog"]["nodes"]
    assert {"outcome": "FAILED", "requestId": request_id} == {
        k: audit[0][k] for k in ("outcome", "requestId")
    }


def test_rest_errors_are_masked_too(server: LiveServer, tokens: Tokens) -> None:
    response = client_of(server).post(
        "/api/v1/backfills",
        json={"target": {"job": "exploding"}, "partitions": {"all": True}},
        headers=bearer(tokens.admin),
    )
    assert response.status_code == 500
    for leak in ("SELECT", "Traceback", "password"):
        assert leak not in response.text
    assert response.headers["x-request-id"] in response.text
