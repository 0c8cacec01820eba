"""The API over real HTTP: a uvicorn server process on 127.0.0.1."""

from __future__ import annotations

import json
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor

import httpx
import pytest

from tests.support import LiveServer, live_server

DEFS = "tests.integration.broken_defs:definitions"


server = live_server(DEFS)


def launch_body(key: str | None = None, job: str = "letters") -> dict[str, object]:
    return {
        "query": """mutation($input: LaunchBackfillInput!) { launchBackfill(input: $input) {
            backfill { id } userErrors { code } } }""",
        "variables": {
            "input": {
                "target": {"job": job},
                "partitions": {"all": True},
                **({"idempotencyKey": key} if key else {}),
            }
        },
    }


def test_v1_and_current_paths_serve_the_same_api(server: LiveServer) -> None:
    for path in ("/graphql/v1", "/graphql"):
        response = server.graphql("{ apiVersion }", path=path)
        assert response.status_code == 200
        assert response.json() == {"data": {"apiVersion": "v1"}}
        assert response.headers["x-request-id"]


def test_graphiql_is_served_to_a_browser(server: LiveServer) -> None:
    response = httpx.get(f"{server.url}/graphql/v1", headers={"Accept": "text/html"})
    assert response.status_code == 200
    assert "graphiql" in response.text.lower()


def test_queries_work_over_get_but_mutations_do_not(server: LiveServer) -> None:
    ok = httpx.get(f"{server.url}/graphql/v1", params={"query": "{ apiVersion }"})
    assert ok.json() == {"data": {"apiVersion": "v1"}}
    body = launch_body()
    refused = httpx.get(
        f"{server.url}/graphql/v1",
        params={"query": str(body["query"]), "variables": json.dumps(body["variables"])},
    )
    assert (refused.status_code, refused.text) == (400, "mutations are not allowed when using GET")
    listed = server.graphql("{ backfills(first: 5) { edges { cursor } } }").json()
    assert listed["data"]["backfills"]["edges"] == []


def test_bodies_over_one_mebibyte_get_413(server: LiveServer) -> None:
    big = b'{"query": "' + b" " * (1024 * 1024 + 10) + b'{ apiVersion }"}'
    announced = httpx.post(
        f"{server.url}/graphql/v1", content=big, headers={"Content-Type": "application/json"}
    )
    assert announced.status_code == 413

    def chunks() -> Iterator[bytes]:
        for i in range(0, len(big), 64 * 1024):
            yield big[i : i + 64 * 1024]

    streamed = httpx.post(
        f"{server.url}/graphql/v1",
        content=chunks(),
        headers={"Content-Type": "application/json"},
    )
    assert streamed.status_code == 413
    assert server.graphql("{ apiVersion }").status_code == 200


@pytest.mark.parametrize(
    ("content", "content_type", "said"),
    [
        ("{not json", "application/json", "Unable to parse request body as JSON"),
        ("query=x", "text/plain", "Unsupported content type"),
    ],
)
def test_malformed_requests_get_a_400_that_says_why(
    server: LiveServer, content: str, content_type: str, said: str
) -> None:
    response = httpx.post(
        f"{server.url}/graphql/v1", content=content, headers={"Content-Type": content_type}
    )
    assert (response.status_code, response.text) == (400, said)


def test_unexpected_errors_are_masked_and_carry_the_request_id(server: LiveServer) -> None:
    response = httpx.post(f"{server.url}/graphql/v1", json=launch_body(job="exploding"))
    assert response.status_code == 200
    error = response.json()["errors"][0]
    assert error["message"] == "Internal server error."
    assert error["extensions"]["code"] == "INTERNAL_ERROR"
    request_id = error["extensions"]["requestId"]
    assert request_id == response.headers["x-request-id"]
    assert "SELECT" not in response.text and "Traceback" not in response.text
    log = server.output()
    assert request_id in log and "SELECT secret" in log


def test_fifty_concurrent_http_launches_with_one_key_create_one_backfill(
    server: LiveServer,
) -> None:
    def send(_: int) -> str:
        response = httpx.post(f"{server.url}/graphql/v1", json=launch_body("same-key"), timeout=60)
        payload = response.json()["data"]["launchBackfill"]
        assert payload["userErrors"] == []
        backfill_id: str = payload["backfill"]["id"]
        return backfill_id

    with ThreadPoolExecutor(max_workers=16) as pool:
        ids = set(pool.map(send, range(50)))
    assert len(ids) == 1
    listed = server.graphql("{ backfills(first: 100) { edges { node { id } } } }").json()
    assert [e["node"]["id"] for e in listed["data"]["backfills"]["edges"]] == list(ids)
