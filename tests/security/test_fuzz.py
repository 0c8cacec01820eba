"""Fuzzing against a live server, with a bounded number of examples.

- schemathesis generates operations from the GraphQL schema (every query and mutation) and
  from the REST OpenAPI document;
- hypothesis generates ``LaunchBackfillInput`` values, valid and not.

No answer may be a 5xx or a masked internal error, and every accepted launch reads back
exactly as it was given. ``BACKFILLER_FUZZ_EXAMPLES`` sets the number of examples (CI: the
default; locally, raise it to search longer).
"""

from __future__ import annotations

import json
import os
from typing import Any

import httpx
import schemathesis
from graphql import get_introspection_query, graphql_sync
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from backfiller.api import schema
from tests.security.conftest import Tokens, bearer, token_server
from tests.support import LAUNCH, LiveServer

EXAMPLES = int(os.environ.get("BACKFILLER_FUZZ_EXAMPLES", "120"))
FUZZ = settings(
    max_examples=EXAMPLES,
    deadline=None,
    database=None,
    suppress_health_check=list(HealthCheck),
)


# The quick start's jobs: every internal error found here is a bug (DEFS has a job that fails
# on purpose).
server = token_server("backfiller.examples.quickstart:definitions")


def error_codes(body: Any) -> list[str]:
    if not isinstance(body, dict):
        return []
    codes = [e.get("extensions", {}).get("code") for e in body.get("errors") or []]
    codes += [e.get("code") for e in body.get("userErrors") or []]
    for value in (body.get("data") or {}).values():
        if isinstance(value, dict):
            codes += [e.get("code") for e in value.get("userErrors") or []]
    return [c for c in codes if isinstance(c, str)]


def test_schemathesis_graphql(server: LiveServer, tokens: Tokens) -> None:
    introspection = graphql_sync(schema._schema, get_introspection_query()).data
    assert introspection is not None
    loaded = schemathesis.graphql.from_dict(introspection)
    endpoint = f"{server.url}/graphql/v1"
    seen: set[str] = set()

    @FUZZ
    @given(case=loaded.as_strategy())
    def check(case: Any) -> None:
        response = case.call(base_url=endpoint, headers=bearer(tokens.admin), timeout=30)
        seen.add(case.operation.label)
        assert response.status_code < 500, (case.body, response.text[:500])
        assert "INTERNAL_ERROR" not in error_codes(response.json()), (case.body, response.text)

    check()
    assert len(seen) > 5


def test_schemathesis_graphql_over_websocket(server: LiveServer, tokens: Tokens) -> None:
    """The same generated operations over one WebSocket: answered, never an internal error."""
    from websockets.exceptions import ConnectionClosed

    from tests.security.sockets import Socket

    introspection = graphql_sync(schema._schema, get_introspection_query()).data
    assert introspection is not None
    loaded = schemathesis.graphql.from_dict(introspection)
    sockets = [Socket(server, tokens.admin)]
    answered = 0

    @FUZZ
    @given(case=loaded.as_strategy())
    def check(case: Any) -> None:
        nonlocal answered
        query = case.body if isinstance(case.body, str) else ""
        try:
            answer = sockets[-1].ask(query)
        except ConnectionClosed as closed:
            # The protocol closes a socket on a document that does not parse: 4400, no more.
            assert closed.rcvd is not None and closed.rcvd.code == 4400, (query, closed)
            sockets.append(Socket(server, tokens.admin))
            return
        answered += 1
        text = json.dumps(answer)
        assert "INTERNAL_ERROR" not in text and "Traceback" not in text, (query, text[:500])

    try:
        check()
    finally:
        for sock in sockets:
            sock.close()
    assert answered > 5


frames = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner),
    max_leaves=12,
)


@st.composite
def socket_messages(draw: st.DrawFn) -> Any:
    """Messages of the protocol, well-formed or not."""
    kind = draw(st.sampled_from(["subscribe", "complete", "ping", "pong", "connection_init"]))
    message: dict[str, Any] = {"type": draw(st.just(kind) | st.text(max_size=10))}
    if draw(st.booleans()):
        message["id"] = draw(st.text(max_size=10) | st.integers())
    if draw(st.booleans()):
        query = st.sampled_from(["{ apiVersion }", "{ me { name } }", "{", "subscription { x }"])
        message["payload"] = draw(
            st.fixed_dictionaries({"query": query | frames}, optional={"variables": frames})
            | frames
        )
    return draw(st.just(message) | frames)


def test_hostile_websocket_frames_close_cleanly(server: LiveServer, tokens: Tokens) -> None:
    """Any frame after the handshake: an answer or a 44xx close, never an internal error, and
    the server keeps answering."""
    from websockets.exceptions import ConnectionClosed

    from tests.security.sockets import Socket

    sockets = [Socket(server, tokens.viewer)]

    @FUZZ
    @given(message=socket_messages())
    def check(message: Any) -> None:
        sock = sockets[-1]
        try:
            sock.ws.send(json.dumps(message))
            sock.ws.send(json.dumps({"type": "ping"}))
            while True:  # everything up to the pong that answers our ping
                answer = json.loads(sock.ws.recv(timeout=20))
                text = json.dumps(answer)
                assert "INTERNAL_ERROR" not in text and "Traceback" not in text, (message, text)
                if answer.get("type") == "pong":
                    return
        except ConnectionClosed as closed:
            code = closed.rcvd.code if closed.rcvd else None
            assert code is not None and 4400 <= code < 4500, (message, code)
            sockets.append(Socket(server, tokens.viewer))

    try:
        check()
    finally:
        for sock in sockets:
            sock.close()
    assert httpx.get(f"{server.url}/healthz", timeout=10).status_code == 200


def test_schemathesis_rest(server: LiveServer, tokens: Tokens) -> None:
    document = httpx.get(
        f"{server.url}/api/v1/openapi.json", headers=bearer(tokens.admin), timeout=30
    ).json()
    loaded = schemathesis.openapi.from_dict(document)

    @FUZZ
    @given(case=loaded.as_strategy())
    def check(case: Any) -> None:
        response = case.call(base_url=server.url, headers=bearer(tokens.admin), timeout=30)
        assert response.status_code < 500, (case.method, case.path, case.body, response.text)
        assert "INTERNAL_ERROR" not in error_codes(response.json()), response.text

    check()


# -- LaunchBackfillInput -----------------------------------------------------------------------

JOBS = {
    "daily_sales": ["2024-01-01", "2024-01-02", "2024-02-29", "2025-12-31"],
    "hourly_events": ["2026-01-01-00:00", "2026-01-01-01:00", "2026-01-02-23:00"],
    "region_report": ["emea", "amer", "apac"],
    "customer_sync": ["no-customer-yet"],
}

any_text = st.text(
    st.characters(codec="utf-8", exclude_characters="\x00"), max_size=60
) | st.sampled_from(["", " ", "\x00", "a\x00b", "🎉", "\u202e", "\r\n", "x" * 600])


@st.composite
def launch_inputs(draw: st.DrawFn) -> dict[str, Any]:
    job = draw(st.sampled_from([*JOBS, "exploding-not", ""]) | st.text(max_size=10))
    keys = JOBS.get(job, ["x"])
    known = st.sampled_from(keys)
    key = known | any_text
    partitions = draw(
        st.one_of(
            st.builds(lambda a, b: {"range": {"start": a, "end": b}}, key, key),
            st.lists(key, max_size=6).map(lambda k: {"keys": k}),
            st.sampled_from([{"all": True}, {"all": False}]),
        )
    )
    given: dict[str, Any] = {"target": {"job": job}, "partitions": partitions}
    optional: dict[str, st.SearchStrategy[Any]] = {
        "title": any_text,
        "description": any_text,
        "tags": st.lists(st.fixed_dictionaries({"key": any_text, "value": any_text}), max_size=4),
        "reprocess": st.sampled_from(["MISSING", "FAILED_AND_MISSING", "ALL"]),
        "order": st.sampled_from(["OLDEST_FIRST", "NEWEST_FIRST"]),
        "maxConcurrentRuns": st.integers(-(2**31), 2**31 - 1) | st.integers(0, 20),
        "runConfig": st.sampled_from([{"currency": "EUR"}, {"currency": "GBP"}, {}, [], 3])
        | st.dictionaries(any_text, st.integers() | any_text, max_size=3),
        "idempotencyKey": any_text,
    }
    for name, strategy in optional.items():
        if draw(st.booleans()):
            given[name] = draw(st.none() | strategy)
    return given


READ = """query($id: ID!) { backfill(id: $id) {
  id title description target { job } partitionSelection { range { start end } keys all }
  tags { key value } reprocess order maxConcurrentRuns runConfig creator status } }"""


def expected_selection(partitions: dict[str, Any]) -> dict[str, Any]:
    if "range" in partitions:
        return {"range": partitions["range"], "keys": None, "all": False}
    if "keys" in partitions:
        return {"range": None, "keys": partitions["keys"], "all": False}
    return {"range": None, "keys": None, "all": True}


def test_hypothesis_launch_inputs_read_back_exactly(server: LiveServer, tokens: Tokens) -> None:
    client = httpx.Client(base_url=server.url, timeout=30)
    accepted = 0

    def send(query: str, variables: dict[str, Any], token: str) -> httpx.Response:
        body = json.dumps({"query": query, "variables": variables})
        headers = {"Content-Type": "application/json", **bearer(token)}
        return client.post("/graphql/v1", content=body, headers=headers)

    @FUZZ
    @given(given_input=launch_inputs())
    def check(given_input: dict[str, Any]) -> None:
        nonlocal accepted
        response = send(LAUNCH, {"input": given_input}, tokens.operator)
        assert response.status_code == 200, response.text
        body = response.json()
        assert "errors" not in body, (given_input, body)
        payload = body["data"]["launchBackfill"]
        if payload["userErrors"]:
            assert payload["backfill"] is None
            assert "INTERNAL_ERROR" not in error_codes(body)
            return
        accepted += 1
        read = send(READ, {"id": payload["backfill"]["id"]}, tokens.viewer).json()
        assert "errors" not in read, read
        backfill = read["data"]["backfill"]
        if given_input.get("idempotencyKey") is not None:
            return  # a replayed key answers with the first backfill of that key
        assert backfill["target"] == given_input["target"]
        assert backfill["partitionSelection"] == expected_selection(given_input["partitions"])
        assert backfill["title"] == given_input.get("title")
        assert backfill["description"] == given_input.get("description")
        assert backfill["tags"] == (given_input.get("tags") or [])
        assert backfill["reprocess"] == (given_input.get("reprocess") or "MISSING")
        assert backfill["order"] == (given_input.get("order") or "OLDEST_FIRST")
        assert backfill["maxConcurrentRuns"] == given_input.get("maxConcurrentRuns")
        assert backfill["runConfig"] == given_input.get("runConfig")
        assert backfill["creator"] == "operator"
        assert backfill["status"] == "REQUESTED"

    try:
        check()
    finally:
        client.close()
    assert accepted > 0, "no generated launch was accepted: the strategy is too wild"
