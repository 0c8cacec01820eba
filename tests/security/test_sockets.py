"""The WebSocket and loopback holes of issue 16, each against a live server and a real client."""

from __future__ import annotations

import json
import shutil
import socket
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.security.conftest import (
    DEFS,
    Tokens,
    audit_entries_sync,
    bearer,
    client_of,
    close_client,
    gql,
    row_counts,
)
from tests.security.defs import LEAK
from tests.security.sockets import Socket
from tests.security.test_hostile import post
from tests.support import LAUNCH, LAUNCH_WITH_CREATOR, LiveServer

CREATE = """mutation($i: CreateApiTokenInput!) { createApiToken(input: $i) {
  secret token { id jobs } userErrors { code field } } }"""
REVOKE = """mutation($i: RevokeApiTokenInput!) { revokeApiToken(input: $i) {
  token { id } userErrors { code } } }"""
REGION = {"target": {"job": "region_report"}, "partitions": {"all": True}}


@pytest.fixture(scope="module")
def server(shared_database_url: str, tokens: Tokens) -> Iterator[LiveServer]:
    # The server holds an admin token, as the docs' examples do: no caller may borrow it.
    # Slow clients are cut off after 3 s (30 s by default), so those tests are quick; not
    # 1 s: on a loaded machine the server's loop can stall long enough to fire the deadline
    # before it reads a request that arrived in time, on a connection the client had reused.
    live = LiveServer(
        shared_database_url,
        DEFS,
        auth="token",
        extra=["--rate-limit", "0"],
        env={"BACKFILLER_TOKEN": tokens.admin, "BACKFILLER_CLIENT_TIMEOUT": "3"},
    )
    yield live
    close_client(live)
    live.stop()


def new_token(server: LiveServer, tokens: Tokens, name: str, **extra: Any) -> str:
    given = {"name": name, "role": "OPERATOR", **extra}
    found = gql(server, CREATE, {"i": given}, tokens.admin).json()["data"]["createApiToken"]
    assert found["userErrors"] == [], found
    secret: str = found["secret"]
    return secret


def token_id(server: LiveServer, tokens: Tokens, name: str) -> str:
    query = "{ apiTokens(first: 100) { nodes { id name } } }"
    nodes = gql(server, query, token=tokens.admin).json()["data"]["apiTokens"]["nodes"]
    return next(str(n["id"]) for n in nodes if n["name"] == name)


# -- 1. a dead token stops working on open sockets ---------------------------------------------


def test_a_revoked_token_stops_working_on_an_open_socket(
    server: LiveServer, tokens: Tokens
) -> None:
    secret = new_token(server, tokens, "ws-revoked")
    sock = Socket(server, secret)
    assert sock.ask("{ me { name } }")["payload"]["data"] == {"me": {"name": "ws-revoked"}}
    gql(server, REVOKE, {"i": {"id": token_id(server, tokens, "ws-revoked")}}, tokens.admin)
    time.sleep(2.1)  # past the few seconds for which a socket's verdict on its token holds
    before = len(
        gql(server, "{ backfills { nodes { id } } }", token=tokens.admin).json()["data"][
            "backfills"
        ]["nodes"]
    )
    sock.send(LAUNCH, {"input": REGION})
    assert sock.close_code() == 4401
    after = gql(server, "{ backfills { nodes { id } } }", token=tokens.admin).json()
    assert len(after["data"]["backfills"]["nodes"]) == before


def test_an_idle_socket_is_closed_once_its_token_is_revoked(
    server: LiveServer, tokens: Tokens
) -> None:
    secret = new_token(server, tokens, "ws-idle")
    sock = Socket(server, secret)
    assert "data" in sock.ask("{ me { name } }")["payload"]
    gql(server, REVOKE, {"i": {"id": token_id(server, tokens, "ws-idle")}}, tokens.admin)
    began = time.monotonic()
    assert sock.close_code() == 4401  # without sending anything: the socket's watch
    assert time.monotonic() - began < 15


def test_an_expired_token_closes_its_socket(server: LiveServer, tokens: Tokens) -> None:
    soon = (datetime.now(UTC) + timedelta(seconds=2)).isoformat()
    secret = new_token(server, tokens, "ws-expiring", expiresAt=soon)
    sock = Socket(server, secret)
    assert "data" in sock.ask("{ me { name } }")["payload"]
    time.sleep(2.5)
    sock.send("{ me { name } }")
    assert sock.close_code() == 4401


# -- 2. a request acts as its caller, never as the server ---------------------------------------


def test_a_trigger_pressed_over_a_socket_acts_as_the_caller(
    server: LiveServer, tokens: Tokens
) -> None:
    secret = new_token(server, tokens, "ws-presser")
    sock = Socket(server, secret)
    answer = sock.ask(
        """mutation { evaluateTrigger(input: {name: "launch_as_caller"}) {
        evaluation { outcome skipReason } userErrors { code } } }"""
    )
    evaluation = answer["payload"]["data"]["evaluateTrigger"]["evaluation"]
    assert evaluation["skipReason"] == "launched as ws-presser"  # not the server's "admin"
    sock.close()


# -- 5. every operation of a socket has its own context -----------------------------------------


def test_operations_on_one_socket_are_audited_apart(
    server: LiveServer, tokens: Tokens, shared_database_url: str
) -> None:
    secret = new_token(server, tokens, "ws-audited")
    sock = Socket(server, secret)
    refused = sock.send(CREATE, {"i": {"name": "not-allowed", "role": "ADMIN"}})
    launched = sock.send(LAUNCH, {"input": REGION})
    answers = {sock.answer(refused)["id"], sock.answer(launched)["id"]}
    assert answers == {refused, launched}
    mine = [e for e in audit_entries_sync(shared_database_url) if e.actor == "ws-audited"]
    by_operation = {e.operation: e for e in mine}
    assert by_operation["createApiToken"].outcome.value == "denied"
    assert by_operation["createApiToken"].message is not None
    assert "bf_" not in (by_operation["createApiToken"].message or "")
    assert by_operation["createApiToken"].subject == "not-allowed"
    assert by_operation["launchBackfill"].outcome.value == "succeeded"
    assert by_operation["launchBackfill"].subject == "job region_report"
    assert by_operation["createApiToken"].request_id != by_operation["launchBackfill"].request_id
    sock.close()


# -- 6. limits on sockets equal HTTP's ------------------------------------------------------------


def test_a_message_over_the_body_limit_closes_the_socket_and_nothing_waits(
    server: LiveServer, tokens: Tokens
) -> None:
    sock = Socket(server, tokens.viewer)
    huge = {"input": {**REGION, "description": "x" * 3_000_000}}
    sock.send(LAUNCH, huge)
    assert sock.close_code() == 1009
    assert httpx.get(f"{server.url}/healthz", timeout=5).status_code == 200


def test_operations_in_flight_are_capped_per_socket(server: LiveServer, tokens: Tokens) -> None:
    launched = gql(server, LAUNCH, {"input": REGION}, tokens.operator).json()
    backfill = launched["data"]["launchBackfill"]["backfill"]["id"]
    sock = Socket(server, tokens.viewer)
    watch = "subscription($id: ID!) { backfillProgress(id: $id) { status } }"
    ids = [sock.send(watch, {"id": backfill}) for _ in range(26)]
    errors: list[dict[str, Any]] = []
    seen = 0
    while seen < 27 and not errors:
        message = json.loads(sock.ws.recv(timeout=20))
        seen += 1
        if message["type"] == "error":
            errors.append(message)
    assert errors and errors[0]["id"] == ids[-1]
    assert "more than 25 operations in flight on this socket" in _refused(errors[0])
    sock.close()


WATCH = "subscription($id: ID!) { backfillProgress(id: $id) { status } }"


@pytest.fixture(scope="module")
def capped_server(shared_database_url: str, tokens: Tokens) -> Iterator[LiveServer]:
    """Small caps: two operations per socket (a flag), three per token (its variable)."""
    live = LiveServer(
        shared_database_url,
        DEFS,
        auth="token",
        extra=["--rate-limit", "0", "--max-operations-per-socket", "2"],
        env={"BACKFILLER_MAX_OPERATIONS_PER_TOKEN": "3"},
    )
    yield live
    close_client(live)
    live.stop()


def _refused(answer: dict[str, Any]) -> str:
    assert answer["type"] == "error", answer
    [error] = answer["payload"]
    assert error["extensions"]["code"] == "RATE_LIMITED"
    return str(error["message"])


def test_operations_are_capped_per_socket_and_per_token_over_all_its_sockets(
    capped_server: LiveServer, tokens: Tokens
) -> None:
    launched = gql(capped_server, LAUNCH, {"input": REGION}, tokens.operator).json()
    watched = {"id": launched["data"]["launchBackfill"]["backfill"]["id"]}
    first, second = Socket(capped_server, tokens.viewer), Socket(capped_server, tokens.viewer)
    running = [first.send(WATCH, watched) for _ in range(2)]
    assert [first.answer(i)["type"] for i in running] == ["next", "next"]
    assert "on this socket" in _refused(first.ask(WATCH, watched))
    assert second.answer(second.send(WATCH, watched))["type"] == "next"  # the token's third
    assert "for this token" in _refused(second.ask("{ me { name } }"))
    # Another token is not affected, and the server answers everyone else.
    other = Socket(capped_server, tokens.operator)
    assert other.ask("{ me { name } }")["payload"]["data"] == {"me": {"name": "operator"}}
    assert httpx.get(f"{capped_server.url}/healthz", timeout=5).status_code == 200
    # Ending one operation frees its place: both sockets stay open and usable.
    first.ws.send(json.dumps({"id": running[0], "type": "complete"}))
    deadline = time.monotonic() + 10
    while (answer := second.ask("{ me { name } }"))["type"] != "next":
        assert time.monotonic() < deadline, answer
        time.sleep(0.1)
    assert answer["payload"]["data"] == {"me": {"name": "viewer"}}
    for sock in (first, second, other):
        sock.close()


def test_unexpected_errors_are_masked_on_sockets(server: LiveServer, tokens: Tokens) -> None:
    sock = Socket(server, tokens.viewer)
    answer = sock.ask('{ job(name: "exploding") { name partitions { keys(first: 5) { nodes } } } }')
    text = json.dumps(answer)
    assert LEAK not in text and "Traceback" not in text
    sock.close()


BAD_LAUNCH = {"input": {"target": {"job": 12, "oops": []}, "partitions": "x" * 600_000}}
"""Variables that coercion would reject, and a large one: a refusal must not look at them."""


def _launch_refusal(answer: dict[str, Any]) -> list[str]:
    assert "errors" not in answer, answer  # no coercion error
    return [e["code"] for e in answer["data"]["launchBackfill"]["userErrors"]]


def test_a_refused_mutation_is_refused_before_its_variables_are_coerced(
    server: LiveServer, tokens: Tokens, shared_database_url: str
) -> None:
    over_http = gql(server, LAUNCH, BAD_LAUNCH, tokens.viewer)
    assert over_http.status_code == 200
    assert _launch_refusal(over_http.json()) == ["FORBIDDEN"]
    rest = client_of(server).post(
        "/api/v1/backfills", json=BAD_LAUNCH["input"], headers=bearer(tokens.viewer)
    )
    assert rest.status_code == 403, rest.text  # not 422: the body is not looked at
    sock = Socket(server, tokens.viewer)
    assert _launch_refusal(sock.ask(LAUNCH, BAD_LAUNCH)["payload"]) == ["FORBIDDEN"]
    # A directive's variable is still read; a fragment's root field is refused all the same.
    guarded = """mutation($input: LaunchBackfillInput!, $b: Boolean!) { ...L }
      fragment L on Mutation { launchBackfill(input: $input) @include(if: $b) {
      backfill { id } userErrors { code } } }"""
    answer = sock.ask(guarded, {**BAD_LAUNCH, "b": True})["payload"]
    assert _launch_refusal(answer) == ["FORBIDDEN"]
    sock.close()
    # An operator's admin mutation: refused, audited with the subject as the caller named it
    # (in a variable, uncoerced, or in a literal).
    operator = Socket(server, tokens.operator)
    answer = operator.ask(CREATE, {"i": {"name": "early-refused", "role": 3, "x": [[[]]]}})
    found = answer["payload"]["data"]["createApiToken"]
    assert found == {
        "secret": None,
        "token": None,
        "userErrors": [{"code": "FORBIDDEN", "field": None}],
    }
    literal = """mutation { createApiToken(input: {name: "early-literal", role: ADMIN}) {
      userErrors { code } } }"""
    answer = operator.ask(literal)["payload"]
    assert answer["data"]["createApiToken"]["userErrors"] == [{"code": "FORBIDDEN"}]
    operator.close()
    entries = audit_entries_sync(shared_database_url)
    viewer = [e.outcome.value for e in entries if e.actor == "viewer"]
    assert viewer[-4:] == ["denied"] * 4
    denied = [(e.operation, e.subject) for e in entries if e.actor == "operator"][-2:]
    assert denied == [("createApiToken", "early-refused"), ("createApiToken", "early-literal")]


def test_an_allowed_mutation_with_bad_variables_is_a_coercion_error(
    server: LiveServer, tokens: Tokens
) -> None:
    answer = gql(server, LAUNCH, BAD_LAUNCH, tokens.operator).json()
    assert answer["data"] is None
    assert answer["errors"][0]["extensions"]["code"] == "GRAPHQL_VALIDATION_FAILED"


def test_queries_refused_by_role_are_refused_before_running(
    server: LiveServer, tokens: Tokens
) -> None:
    sock = Socket(server, tokens.viewer)
    answer = sock.ask("{ auditLog { nodes { id } } }")
    payload = answer["payload"]
    errors = payload if isinstance(payload, list) else payload["errors"]
    codes = [e["extensions"]["code"] for e in errors]
    assert codes == ["FORBIDDEN"]
    sock.close()


# -- 3. runs act with their own credential -------------------------------------------------------


def test_the_run_header_changes_nothing_in_the_audit_log(
    server: LiveServer, tokens: Tokens, shared_database_url: str
) -> None:
    gql(
        server,
        LAUNCH,
        {"input": REGION},
        tokens.operator,
        headers={"X-Backfiller-Run-Id": "run_99"},
    )
    entries = audit_entries_sync(shared_database_url)
    assert entries[-1].actor == "operator"
    assert entries[-1].run_id is None


# -- 7. smaller holes ---------------------------------------------------------------------------


def test_pages_cannot_be_framed_or_sniffed(server: LiveServer) -> None:
    for path in ("/ui/index.html", "/graphql/v1", "/healthz"):
        response = httpx.get(f"{server.url}{path}", headers={"Accept": "text/html"}, timeout=10)
        assert response.headers["x-frame-options"] == "DENY"
        assert "frame-ancestors 'none'" in response.headers["content-security-policy"]
        assert response.headers["x-content-type-options"] == "nosniff"


def test_tampered_cursors_are_typed_errors(server: LiveServer, tokens: Tokens) -> None:
    import base64

    beyond = base64.urlsafe_b64encode(b"bf:9999999999999999999").decode().rstrip("=")
    answer = gql(
        server,
        "query($a: String) { backfills(after: $a) { nodes { id } } }",
        {"a": beyond},
        tokens.viewer,
    )
    assert answer.status_code == 200
    assert [e["extensions"]["code"] for e in answer.json()["errors"]] == ["INVALID_ARGUMENT"]
    rest = client_of(server).get(
        "/api/v1/backfills", params={"after": beyond}, headers=bearer(tokens.viewer)
    )
    assert rest.status_code in (400, 422), rest.text
    assert "Traceback" not in rest.text


def test_json_nested_too_deeply_is_a_400(server: LiveServer, tokens: Tokens) -> None:
    body = '{"query": "{ apiVersion }", "variables": ' + "[" * 50_000 + "]" * 50_000 + "}"
    response = client_of(server).post(
        "/graphql/v1",
        content=body,
        headers={"Content-Type": "application/json", **bearer(tokens.viewer)},
    )
    assert response.status_code == 400


def test_a_client_that_sends_its_headers_slowly_is_cut_off(server: LiveServer) -> None:
    with socket.create_connection(("127.0.0.1", server.port), timeout=20) as conn:
        conn.sendall(b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n")
        # ...and never the blank line that ends them: the server closes the connection.
        assert conn.recv(1024) == b""


def test_a_client_that_sends_its_body_slowly_is_cut_off(server: LiveServer, tokens: Tokens) -> None:
    with socket.create_connection(("127.0.0.1", server.port), timeout=20) as conn:
        conn.sendall(
            b"POST /graphql/v1 HTTP/1.1\r\nHost: 127.0.0.1\r\n"
            + f"Authorization: Bearer {tokens.viewer}\r\n".encode()
            + b"Content-Type: application/json\r\nContent-Length: 100\r\n\r\n{"
        )
        # ...and never the other 99 bytes: the server closes the connection, unanswered.
        assert conn.recv(1024) == b""


def _answer_then_close(conn: socket.socket) -> bytes:
    received = b""
    while chunk := conn.recv(65536):
        received += chunk
    return received


def test_a_request_head_still_unfinished_past_16_kib_is_a_400_and_closed(
    server: LiveServer,
) -> None:
    # 64 KiB of one header that never ends: the server stops reading it (h11 bounds what it
    # holds of an unfinished head at 16 KiB) instead of buffering whatever the client sends.
    head = b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Big: " + b"x" * 64 * 1024
    with socket.create_connection(("127.0.0.1", server.port), timeout=20) as conn:
        conn.sendall(head)
        answer = _answer_then_close(conn)
    assert answer.startswith(b"HTTP/1.1 400 "), answer[:200]
    assert httpx.get(f"{server.url}/healthz", timeout=5).status_code == 200


def test_a_head_under_16_kib_with_a_large_body_is_served(
    server: LiveServer, tokens: Tokens
) -> None:
    # The cap is on the head only: a 12 KiB header and a 600 KiB body (a long key list) pass.
    keys = [f"2024-01-{d:02d}" for d in range(1, 32)] * 2_000
    body = json.dumps({"query": "{ apiVersion }", "variables": {"keys": keys}}).encode()
    response = client_of(server).post(
        "/graphql/v1",
        content=body,
        headers={
            "Content-Type": "application/json",
            "X-Padding": "p" * 12 * 1024,
            **bearer(tokens.viewer),
        },
    )
    assert len(body) > 600 * 1024
    assert response.status_code == 200, response.text[:200]
    assert response.json()["data"] == {"apiVersion": "v1"}


def test_json_nested_too_deeply_closes_a_socket_with_4400(
    server: LiveServer, tokens: Tokens
) -> None:
    sock = Socket(server, tokens.viewer)
    deep = '{"id": "1", "type": "subscribe", "payload": ' + "[" * 50_000 + "]" * 50_000 + "}"
    sock.ws.send(deep)
    assert sock.close_code() == 4400
    assert httpx.get(f"{server.url}/healthz", timeout=5).status_code == 200


# -- 8. tokens limited to some jobs --------------------------------------------------------------


def test_a_token_scoped_to_jobs_launches_only_those(server: LiveServer, tokens: Tokens) -> None:
    secret = new_token(server, tokens, "scoped", jobs=["region_report"])
    allowed = gql(server, LAUNCH, {"input": REGION}, secret).json()["data"]["launchBackfill"]
    assert allowed["userErrors"] == []
    other = {"target": {"job": "daily_sales"}, "partitions": {"keys": ["2024-01-01"]}}
    refused = gql(server, LAUNCH, {"input": other}, secret).json()["data"]["launchBackfill"]
    assert [e["code"] for e in refused["userErrors"]] == ["FORBIDDEN"]
    trigger = gql(
        server,
        'mutation { evaluateTrigger(input: {name: "launch_as_caller"}) { userErrors { code } } }',
        token=secret,
    ).json()["data"]["evaluateTrigger"]
    assert [e["code"] for e in trigger["userErrors"]] == ["FORBIDDEN"]
    unknown = gql(
        server,
        CREATE,
        {"i": {"name": "bad-scope", "role": "OPERATOR", "jobs": ["nope"]}},
        tokens.admin,
    ).json()["data"]["createApiToken"]
    assert unknown["userErrors"] == [{"code": "INVALID_ARGUMENT", "field": ["jobs"]}]


STEER = """mutation($p: PauseBackfillInput!, $r: ResumeBackfillInput!, $c: CancelBackfillInput!,
  $t: RetryBackfillInput!) {
  pauseBackfill(input: $p) { backfill { status } userErrors { code field } }
  resumeBackfill(input: $r) { backfill { status } userErrors { code field } }
  cancelBackfill(input: $c) { backfill { status } userErrors { code field } }
  retryBackfill(input: $t) { backfill { id } userErrors { code field } } }"""
PREVIEW = """mutation($i: LaunchBackfillInput!) { previewBackfill(input: $i) {
  preview { runs } userErrors { code } } }"""


def _assets(*names: str, downstream: bool = False) -> dict[str, Any]:
    target = {"assets": {"names": list(names), "downstream": downstream}}
    return {"target": target, "partitions": {"all": True}}


def _codes(payload: dict[str, Any]) -> list[str]:
    return [e["code"] for e in payload["userErrors"]]


def test_a_scoped_token_reaches_only_the_jobs_and_assets_in_its_scope(
    server: LiveServer, tokens: Tokens, shared_database_url: str
) -> None:
    """Scopes name jobs and assets (one namespace), for every mutation of a backfill, on
    HTTP, WebSocket and REST; reads stay open."""
    secret = new_token(server, tokens, "scoped-assets", jobs=["region_report", "raw_clicks"])

    def launch(given: dict[str, Any], token: str) -> dict[str, Any]:
        answer = gql(server, LAUNCH_WITH_CREATOR, {"input": given}, token).json()
        found: dict[str, Any] = answer["data"]
        return found["launchBackfill"]  # type: ignore[no-any-return]

    outside = [
        launch(_assets("click_report"), tokens.operator)["backfill"]["id"],
        launch({"target": {"job": "daily_sales"}, "partitions": {"all": True}}, tokens.operator)[
            "backfill"
        ]["id"],
    ]
    inside = launch(_assets("raw_clicks"), secret)
    assert inside["userErrors"] == [] and inside["backfill"]["creator"] == "scoped-assets"
    for refused in (_assets("click_report"), _assets("raw_clicks", downstream=True)):
        assert _codes(launch(refused, secret)) == ["FORBIDDEN"]
    preview = gql(server, PREVIEW, {"i": _assets("click_report")}, secret).json()["data"]
    assert _codes(preview["previewBackfill"]) == ["FORBIDDEN"]
    sock = Socket(server, secret)
    for backfill in outside:
        ids = {name: {"id": backfill} for name in ("p", "r", "c", "t")}
        for answer in (gql(server, STEER, ids, secret).json(), sock.ask(STEER, ids)["payload"]):
            for payload in answer["data"].values():
                assert payload["userErrors"] == [{"code": "FORBIDDEN", "field": ["id"]}]
        for verb in ("pause", "resume", "cancel", "retry"):
            rest = client_of(server).post(
                f"/api/v1/backfills/{backfill}/{verb}", json={}, headers=bearer(secret)
            )
            assert rest.status_code == 403, rest.text
        read = gql(server, "query($id: ID!) { backfill(id: $id) { status } }", ids["p"], secret)
        assert read.json()["data"]["backfill"]["status"] in ("REQUESTED", "RUNNING")
    over_socket = sock.ask(LAUNCH, {"input": _assets("click_report")})["payload"]["data"]
    assert _codes(over_socket["launchBackfill"]) == ["FORBIDDEN"]
    sock.close()
    preview_rest = client_of(server).post(
        "/api/v1/backfills:preview", json=_assets("click_report"), headers=bearer(secret)
    )
    assert preview_rest.status_code == 403, preview_rest.text
    # Its own backfill, of an asset in its scope, it may steer.
    pause = """mutation($p: PauseBackfillInput!) { pauseBackfill(input: $p) {
      backfill { status } userErrors { code } } }"""
    paused = gql(server, pause, {"p": {"id": inside["backfill"]["id"]}}, secret).json()
    assert paused["data"]["pauseBackfill"]["userErrors"] == [], paused
    mine = [e for e in audit_entries_sync(shared_database_url) if e.actor == "scoped-assets"]
    assert {e.outcome.value for e in mine if e.operation != "launchBackfill"} >= {"denied"}
    assert [e.outcome.value for e in mine].count("succeeded") == 2  # a launch and a pause


# -- 4. DNS rebinding ----------------------------------------------------------------------------


@pytest.fixture(scope="module")
def open_server(shared_database_url: str) -> Iterator[LiveServer]:
    """``--auth none`` on loopback, as ``backfiller dev`` runs, plus one configured host."""
    live = LiveServer(
        shared_database_url, DEFS, auth="none", extra=["--allowed-host", "backfiller.test"]
    )
    yield live
    live.stop()


def test_a_rebound_host_is_refused(open_server: LiveServer, shared_database_url: str) -> None:
    evil = {"Host": "evil.example", "Origin": "http://evil.example"}
    create = {"i": {"name": "rebound", "role": "ADMIN"}}
    refused = httpx.post(
        f"{open_server.url}/graphql/v1",
        json={"query": CREATE, "variables": create},
        headers=evil,
        timeout=10,
    )
    assert refused.status_code == 421
    # An allowed host with a foreign origin is refused too (the origin is not compared to Host).
    foreign = httpx.post(
        f"{open_server.url}/graphql/v1",
        json={"query": CREATE, "variables": create},
        headers={"Origin": "http://evil.example"},
        timeout=10,
    )
    assert foreign.status_code == 403
    assert httpx.get(f"{open_server.url}/ui/", headers={"Host": "evil.example"}).status_code == 421
    configured = httpx.post(
        f"{open_server.url}/graphql/v1",
        json={"query": "{ apiVersion }"},
        headers={"Host": "backfiller.test:80", "Origin": "http://backfiller.test:80"},
        timeout=10,
    )
    assert configured.status_code == 200
    names = [e.subject for e in audit_entries_sync(shared_database_url)]
    assert "rebound" not in names


def test_dev_refuses_a_rebound_host_too(tmp_path: Path, sqlite_template: Path) -> None:
    """``backfiller dev`` (API, UI and daemon, ``--auth none``, on SQLite) guards the same."""
    shutil.copy(sqlite_template, tmp_path / "dev.db")  # migrated already
    live = LiveServer(
        f"sqlite:///{tmp_path / 'dev.db'}", DEFS, command="dev", extra=["--workers", "1"]
    )
    try:
        create = {"query": CREATE, "variables": {"i": {"name": "rebound-dev", "role": "ADMIN"}}}
        evil = {"Host": "evil.example", "Origin": "http://evil.example"}
        assert httpx.post(f"{live.url}/graphql/v1", json=create, headers=evil).status_code == 421
        foreign = {"Origin": "http://evil.example"}
        assert httpx.post(f"{live.url}/graphql/v1", json=create, headers=foreign).status_code == 403
        tokens = httpx.post(
            f"{live.url}/graphql/v1", json={"query": "{ apiTokens { nodes { name } } }"}
        )
        assert tokens.json()["data"]["apiTokens"]["nodes"] == []
    finally:
        live.stop()


def test_graphiql_is_served_from_the_package(server: LiveServer) -> None:
    page = httpx.get(f"{server.url}/graphql/v1", headers={"Accept": "text/html"}, timeout=10)
    assert page.status_code == 200
    assert "unpkg" not in page.text and "https://" not in page.text
    assert "/graphiql/assets/graphiql.min.js" in page.text
    assert page.headers["x-frame-options"] == "DENY"
    for name in ("graphiql.min.js", "graphiql.min.css", "react-dom.production.min.js"):
        asset = httpx.get(f"{server.url}/graphiql/assets/{name}", timeout=10)
        assert asset.status_code == 200 and asset.headers["content-encoding"] == "gzip"
        assert len(asset.content) > 1000  # httpx decompresses it
    raw = httpx.get(
        f"{server.url}/graphiql/assets/react.production.min.js",
        headers={"Accept-Encoding": "identity"},
        timeout=10,
    )
    assert "content-encoding" not in raw.headers and b"React" in raw.content
    assert httpx.get(f"{server.url}/graphiql/assets/x.js", timeout=10).status_code == 404


def test_an_unstorable_key_is_refused_at_its_index_over_http_and_over_a_socket(
    server: LiveServer, tokens: Tokens, shared_database_url: str
) -> None:
    """A NUL or a lone surrogate in a list of keys (checked joined, in one pass) is a typed
    error naming the key's index, on both transports, and changes nothing."""
    query = """mutation($i: LaunchBackfillInput!) { launchBackfill(input: $i) {
      backfill { id } userErrors { code field } } }"""
    keys = [f"2024-01-{d:02}" for d in range(1, 11)]
    before = row_counts(shared_database_url, ignore=("audit_log",))
    sock = Socket(server, tokens.operator)
    for index, bad in [(3, "2024-02-01\x00"), (9, "\ud800")]:
        given = [*keys[:index], bad, *keys[index + 1 :]]
        launch = {"i": {"target": {"job": "daily_sales"}, "partitions": {"keys": given}}}
        answer = post(server, query, launch, tokens.operator).json()  # ASCII: \ud800 escaped
        over_http = answer["data"]["launchBackfill"]
        over_socket = sock.ask(query, launch)["payload"]["data"]["launchBackfill"]
        expected = {
            "backfill": None,
            "userErrors": [
                {"code": "INVALID_ARGUMENT", "field": ["partitions", "keys", str(index)]}
            ],
        }
        assert over_http == expected
        assert over_socket == expected
    sock.close()
    assert row_counts(shared_database_url, ignore=("audit_log",)) == before


def test_a_long_key_list_answers_alike_over_http_and_over_a_socket(
    server: LiveServer, tokens: Tokens, shared_database_url: str
) -> None:
    """40 keys: the list is coerced in one step (resolvers/string_lists.py). A non-string key
    is graphql-core's error at its index, a NUL is INVALID_ARGUMENT at its index, on both
    transports, writing nothing; a valid list launches with its keys in order on both."""
    query = """mutation($i: LaunchBackfillInput!) { launchBackfill(input: $i) {
      backfill { partitionSelection { keys } } userErrors { code field } } }"""
    keys = [f"2024-01-{d:02}" for d in range(1, 32)] + [f"2024-02-{d:02}" for d in range(1, 10)]
    before = row_counts(shared_database_url, ignore=("audit_log",))
    sock = Socket(server, tokens.operator)
    mixed: list[object] = [*keys[:33], 20240203, *keys[34:]]
    not_a_string = {"i": {"target": {"job": "daily_sales"}, "partitions": {"keys": mixed}}}
    over_http = post(server, query, not_a_string, tokens.operator).json()
    over_socket = sock.ask(query, not_a_string)
    assert over_http["data"] is None
    (message,) = [e["message"] for e in over_http["errors"]]
    assert message.startswith("Variable '$i' has invalid value at .partitions.keys[33]"), message
    assert over_socket["payload"].get("data") is None
    assert [e["message"] for e in over_socket["payload"]["errors"]] == [message]
    nul = [*keys[:20], "2024-01-21\x00", *keys[21:]]
    launch = {"i": {"target": {"job": "daily_sales"}, "partitions": {"keys": nul}}}
    expected = {
        "backfill": None,
        "userErrors": [{"code": "INVALID_ARGUMENT", "field": ["partitions", "keys", "20"]}],
    }
    assert post(server, query, launch, tokens.operator).json()["data"]["launchBackfill"] == (
        expected
    )
    assert sock.ask(query, launch)["payload"]["data"]["launchBackfill"] == expected
    assert row_counts(shared_database_url, ignore=("audit_log",)) == before
    for transport in ("http", "socket"):
        valid = {"i": {"target": {"job": "daily_sales"}, "partitions": {"keys": keys}}}
        if transport == "http":
            answer = post(server, query, valid, tokens.operator).json()["data"]
        else:
            answer = sock.ask(query, valid)["payload"]["data"]
        payload = answer["launchBackfill"]
        assert payload["userErrors"] == []
        assert payload["backfill"]["partitionSelection"]["keys"] == keys
    sock.close()


H2C_OFFER = (
    "Connection: Upgrade, HTTP2-Settings\r\nUpgrade: h2c\r\n"
    "HTTP2-Settings: AAEAAEAAAAIAAAABAAMAAABkAAQBAAAAAAUAAEAA\r\n"
)
"""The headers of Java's HttpClient offering a plain-HTTP request an upgrade to h2c."""


def _post_head(token: str, body: bytes, extra: str = "", framing: str | None = None) -> bytes:
    """The head of a POST of ``body`` to the API (``extra`` headers, ``framing`` instead of
    its Content-Length)."""
    return (
        f"POST /graphql/v1 HTTP/1.1\r\nHost: 127.0.0.1\r\n{extra}"
        f"Authorization: Bearer {token}\r\nContent-Type: application/json\r\n"
        f"{framing or f'Content-Length: {len(body)}'}\r\n\r\n"
    ).encode()


def _half_closed_answer(server: LiveServer, request: bytes) -> Any:
    """Send ``request``, close the sending side, read to the end: the 200 answer's JSON."""
    with socket.create_connection(("127.0.0.1", server.port), timeout=20) as conn:
        conn.sendall(request)
        conn.shutdown(socket.SHUT_WR)
        answer = _answer_then_close(conn)
    status, _, rest = answer.partition(b"\r\n")
    assert status == b"HTTP/1.1 200 OK", answer[:300]
    return json.loads(rest.partition(b"\r\n\r\n")[2])


def _answers(conn: socket.socket, count: int) -> list[tuple[bytes, Any]]:
    """``count`` HTTP/1.1 answers read off ``conn``: each one's status line and JSON body."""
    buffer, found = b"", list[tuple[bytes, Any]]()
    while len(found) < count:
        head, sep, rest = buffer.partition(b"\r\n\r\n")
        length = next(
            (
                int(line.split(b":", 1)[1])
                for line in head.split(b"\r\n")
                if line.lower().startswith(b"content-length:")
            ),
            None,
        )
        if sep and length is not None and len(rest) >= length:
            found.append((head.split(b"\r\n")[0], json.loads(rest[:length])))
            buffer = rest[length:]
            continue
        chunk = conn.recv(65536)
        assert chunk, (found, buffer[:300])
        buffer += chunk
    return found


def test_a_post_that_offers_an_upgrade_to_http2_is_read_and_answered_over_http_1_1(
    server: LiveServer, tokens: Tokens
) -> None:
    # Java's default HttpClient offers plain-HTTP requests an upgrade to h2c, body included. The
    # server answers over HTTP/1.1 and reads the body (llhttp takes what follows such a head for
    # the new protocol's: uvicorn's httptools protocol handed the application an empty body, and
    # the answer was "Unable to parse request body as JSON"; see web/protocol.py).
    body = json.dumps({"query": "{ apiVersion }"}).encode()
    request = _post_head(tokens.viewer, body, H2C_OFFER) + body
    assert _half_closed_answer(server, request) == {"data": {"apiVersion": "v1"}}


def test_an_h2c_offer_whose_body_comes_later_is_answered_and_the_connection_goes_on(
    server: LiveServer, tokens: Tokens
) -> None:
    # The body in its own writes after the head, then a plain request on the same connection:
    # both answered, in order, over HTTP/1.1.
    body = json.dumps({"query": "{ apiVersion }"}).encode()
    then = json.dumps({"query": "{ __typename }"}).encode()
    with socket.create_connection(("127.0.0.1", server.port), timeout=20) as conn:
        conn.sendall(_post_head(tokens.viewer, body, H2C_OFFER))
        time.sleep(0.2)
        conn.sendall(body[:5])
        time.sleep(0.2)
        conn.sendall(body[5:] + _post_head(tokens.viewer, then) + then)
        first, second = _answers(conn, 2)
    assert first == (b"HTTP/1.1 200 OK", {"data": {"apiVersion": "v1"}})
    assert second == (b"HTTP/1.1 200 OK", {"data": {"__typename": "Query"}})


def test_an_h2c_offer_with_a_chunked_body_is_a_400(server: LiveServer, tokens: Tokens) -> None:
    body = json.dumps({"query": "{ apiVersion }"}).encode()
    chunked = f"{len(body):x}\r\n".encode() + body + b"\r\n0\r\n\r\n"
    head = _post_head(tokens.viewer, body, H2C_OFFER, "Transfer-Encoding: chunked")
    with socket.create_connection(("127.0.0.1", server.port), timeout=20) as conn:
        conn.sendall(head + chunked)
        answer = _answer_then_close(conn)
    assert answer.startswith(b"HTTP/1.1 400 "), answer[:300]
    assert b"needs a length" in answer


def test_a_client_that_closes_its_side_after_its_request_still_gets_the_answer(
    server: LiveServer, tokens: Tokens
) -> None:
    # The answer needs the database (the token is looked up): it is written after the client
    # half-closed, and the connection closes after it.
    body = json.dumps({"query": "{ apiVersion }"}).encode()
    request = _post_head(tokens.viewer, body) + body
    assert _half_closed_answer(server, request) == {"data": {"apiVersion": "v1"}}


def test_the_same_document_is_costed_again_over_a_socket_when_its_variables_change(
    server: LiveServer, tokens: Tokens
) -> None:
    """As over HTTP (test_hostile): the cost a server remembers for a parsed document never
    stands in for one that its variables change."""
    query = (
        "query Q($outer: Int, $inner: Int) { backfills(first: $outer) { nodes { "
        "runs(first: $inner) { nodes { logs(first: 100) { nodes { message } } } } } } }"
    )
    small, large = {"outer": 2, "inner": 2}, {"outer": 100, "inner": 100}
    sock = Socket(server, tokens.viewer)
    for variables in (small, large, small, large):
        message = sock.ask(query, variables)
        payload = message["payload"]
        errors = payload if message["type"] == "error" else payload.get("errors") or []
        found = [e.get("extensions", {}).get("code") for e in errors]
        expected = [] if variables is small else ["QUERY_TOO_COMPLEX"]
        assert found == expected, (variables, message)
    sock.close()
