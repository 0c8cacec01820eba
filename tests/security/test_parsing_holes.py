"""The last parsing holes, on every path of a live server: a number longer than the interpreter
converts (4,300 digits), and a subscription sent over HTTP. Each is a typed refusal (a 400
with a code over HTTP, an ``error`` message on a socket), never an internal error, and the
server logs no traceback for it."""

from __future__ import annotations

import json

import httpx

from tests.security.conftest import Tokens, bearer, client_of, row_counts, token_server
from tests.security.sockets import Socket
from tests.support import LiveServer

HUGE = "9" * 5000
QUERY = "query($first: Int) { backfills(first: $first) { nodes { id } } }"
SUBSCRIPTION = 'subscription { backfillProgress(id: "bf_1") { status } }'
HEADERS = ("x-frame-options", "x-content-type-options", "content-security-policy")


server = token_server()


def refused(response: httpx.Response, code: str) -> None:
    """A 400 with ``code``, the headers of every answer, and no internal error."""
    assert response.status_code == 400, response.text[:300]
    body = response.json()
    assert [e["extensions"]["code"] for e in body["errors"]] == [code], body
    for name in HEADERS:
        assert name in response.headers, name


def test_a_huge_number_is_a_typed_400_on_every_http_path(
    server: LiveServer, tokens: Tokens, shared_database_url: str
) -> None:
    client = client_of(server)
    auth = {"Content-Type": "application/json", **bearer(tokens.operator)}
    body = '{"query": "' + QUERY + '", "variables": {"first": ' + HUGE + "}}"
    launch = (
        '{"query": "mutation($i: LaunchBackfillInput!) { launchBackfill(input: $i) '
        '{ userErrors { code } } }", "variables": {"i": {"target": {"job": "daily_sales"}, '
        '"partitions": {"all": true}, "runConfig": {"n": ' + HUGE + "}}}}"
    )
    before = row_counts(shared_database_url)
    for path in ("/graphql/v1", "/graphql"):
        refused(client.post(path, content=body, headers=auth), "INVALID_ARGUMENT")
        refused(client.post(path, content=launch, headers=auth), "INVALID_ARGUMENT")
        refused(client.post(path, content=f"[{body}]", headers=auth), "INVALID_ARGUMENT")
        over_get = client.get(
            path,
            params={"query": QUERY, "variables": '{"first": ' + HUGE + "}"},
            headers=bearer(tokens.operator),
        )
        refused(over_get, "INVALID_ARGUMENT")
    rest = client.post(
        "/api/v1/backfills",
        content='{"target": {"job": "daily_sales"}, "partitions": {"all": true}, '
        '"runConfig": {"n": ' + HUGE + "}}",
        headers=auth,
    )
    assert rest.status_code == 400
    assert [e["code"] for e in rest.json()["userErrors"]] == ["MALFORMED_JSON"]
    assert "set_int_max_str_digits" not in rest.text
    # Written in the document itself, the number is a typed error of the operation.
    literal = client.post(
        "/graphql/v1",
        json={"query": "{ backfills(first: " + HUGE + ") { nodes { id } } }"},
        headers=bearer(tokens.operator),
    )
    assert literal.status_code == 200
    assert [e["extensions"]["code"] for e in literal.json()["errors"]] == ["INVALID_ARGUMENT"]
    assert row_counts(shared_database_url) == before
    log = server.output()
    assert "Exceeds the limit" not in log and "INTERNAL_ERROR" not in log


def test_a_huge_number_on_a_socket_is_an_error_message_and_the_socket_lives_on(
    server: LiveServer, tokens: Tokens
) -> None:
    socket = Socket(server, tokens.viewer)
    try:
        payload = '{"query": "' + QUERY + '", "variables": {"first": ' + HUGE + "}}"
        socket.ws.send('{"id": "big", "type": "subscribe", "payload": ' + payload + "}")
        answer = socket.answer("big")
        assert answer["type"] == "error"
        assert [e["extensions"]["code"] for e in answer["payload"]] == ["INVALID_ARGUMENT"]
        # The socket still serves.
        assert socket.ask("{ apiVersion }")["payload"]["data"] == {"apiVersion": "v1"}
        # A message that is no operation (here a ping) with such a number breaks the protocol.
        socket.ws.send('{"type": "ping", "payload": {"n": ' + HUGE + "}}")
        assert socket.close_code() == 4400
    finally:
        socket.close()
    assert "Exceeds the limit" not in server.output()


def test_a_subscription_over_http_is_refused_with_a_code(
    server: LiveServer, tokens: Tokens, shared_database_url: str
) -> None:
    client = client_of(server)
    before = row_counts(shared_database_url)
    for path in ("/graphql/v1", "/graphql"):
        over_post = client.post(path, json={"query": SUBSCRIPTION}, headers=bearer(tokens.viewer))
        refused(over_post, "OPERATION_NOT_SUPPORTED")
        over_get = client.get(path, params={"query": SUBSCRIPTION}, headers=bearer(tokens.viewer))
        refused(over_get, "OPERATION_NOT_SUPPORTED")
        assert "WebSocket" in json.loads(over_get.text)["errors"][0]["message"]
    assert row_counts(shared_database_url) == before
    # Over a socket, where subscriptions belong, the same document runs.
    socket = Socket(server, tokens.viewer)
    try:
        answer = socket.ask(SUBSCRIPTION)
        assert answer["type"] in ("next", "error")
        assert "INTERNAL_ERROR" not in json.dumps(answer)
    finally:
        socket.close()
    log = server.output()
    assert "Cannot return null" not in log and "Traceback" not in log
