"""Teams and ``updateBackfill`` through a server that requires tokens: a token's team is what
its launches act for; admins set tokens' teams and teams' limits; ``updateBackfill`` changes a
backfill that is not finished, audited, with an event, and refuses bad input with the same
typed errors over HTTP and WebSocket, changing nothing."""

from __future__ import annotations

import json
from typing import Any

from typer.testing import CliRunner

from backfiller.cli.app import app, register_commands
from backfiller_client import Client
from tests.security.conftest import Tokens, gql
from tests.security.sockets import Socket
from tests.support import LiveServer

register_commands()  # as the command's main() does

CREATE = """mutation($i: CreateApiTokenInput!) { createApiToken(input: $i) {
  secret token { id team } userErrors { code field } } }"""
SET_TEAM = """mutation($i: UpdateApiTokenInput!) { updateApiToken(input: $i) {
  token { id team } userErrors { code field } } }"""
REVOKE = "mutation($i: RevokeApiTokenInput!) { revokeApiToken(input: $i) { token { id } } }"
LAUNCH = """mutation($i: LaunchBackfillInput!) { launchBackfill(input: $i) {
  backfill { id team priority } userErrors { code field } } }"""
UPDATE = """mutation($i: UpdateBackfillInput!) { updateBackfill(input: $i) {
  backfill { id maxConcurrentRuns priority title description }
  userErrors { code field message } } }"""
READ = """query($id: ID!) { backfill(id: $id) { maxConcurrentRuns priority title description
  updatedAt events { nodes { kind actor message } } } }"""
LIST = """query($team: String) { backfills(first: 100, filter: { team: $team }) {
  nodes { id team } } }"""
SET_LIMIT = """mutation($i: SetTeamLimitInput!) { setTeamLimit(input: $i) {
  teamLimit { team maxConcurrentRuns updatedBy } userErrors { code field } } }"""
LIMITS = "{ teamLimits { team maxConcurrentRuns } }"
AUDIT = """{ auditLog(first: 20, operation: "updateBackfill") { nodes { actor subject outcome
  codes } } }"""
CANCEL = "mutation($i: CancelBackfillInput!) { cancelBackfill(input: $i) { userErrors { code } } }"


def data(response: Any) -> dict[str, Any]:
    body: dict[str, Any] = response.json()
    assert response.status_code == 200 and "errors" not in body, body
    found: dict[str, Any] = body["data"]
    return found


def launch(server: LiveServer, token: str, job: str = "daily_sales", **extra: Any) -> Any:
    given = {
        "target": {"job": job},
        "partitions": {"range": {"start": "2024-03-01", "end": "2024-03-05"}}
        if job == "daily_sales"
        else {"all": True},
        **extra,
    }
    payload = data(gql(server, LAUNCH, {"i": given}, token))["launchBackfill"]
    assert payload["userErrors"] == [], payload
    return payload["backfill"]


def new_token(server: LiveServer, admin: str, name: str, **extra: Any) -> tuple[str, str]:
    given = {"name": name, "role": "OPERATOR", **extra}
    made = data(gql(server, CREATE, {"i": given}, admin))["createApiToken"]
    assert made["userErrors"] == [], made
    return made["secret"], made["token"]["id"]


def test_a_tokens_team_is_what_its_launches_act_for(
    secure_server: LiveServer, tokens: Tokens
) -> None:
    secret, token_id = new_token(secure_server, tokens.admin, "alpha-bot", team="alpha")
    me = data(gql(secure_server, "{ me { name team } }", token=secret))["me"]
    assert me == {"name": "alpha-bot", "team": "alpha"}
    first = launch(secure_server, secret)
    assert (first["team"], first["priority"]) == ("alpha", 0)
    assert launch(secure_server, secret, priority=7)["priority"] == 7
    # A job's own priority is the default of its launches.
    assert launch(secure_server, secret, "urgent_report")["priority"] == 5
    assert launch(secure_server, secret, "urgent_report", priority=-2)["priority"] == -2
    # A token without a team launches for none.
    assert launch(secure_server, tokens.operator)["team"] is None

    # An admin moves the token to another team: later launches act for it, earlier ones keep
    # the team they were launched for.
    moved = data(
        gql(secure_server, SET_TEAM, {"i": {"id": token_id, "team": "beta"}}, tokens.admin)
    )
    assert moved["updateApiToken"]["token"] == {"id": token_id, "team": "beta"}
    second = launch(secure_server, secret)
    assert second["team"] == "beta"
    alphas = data(gql(secure_server, LIST, {"team": "alpha"}, secret))["backfills"]["nodes"]
    assert first["id"] in {b["id"] for b in alphas} and {b["team"] for b in alphas} == {"alpha"}
    betas = data(gql(secure_server, LIST, {"team": "beta"}, secret))["backfills"]["nodes"]
    assert [b["id"] for b in betas] == [second["id"]]
    # The same filter in the Python client and the CLI (`backfiller list --team`).
    with Client(secure_server.url, token=secret) as client:
        assert [b.id for b in client.list_backfills(team="beta")] == [second["id"]]
    env = {"BACKFILLER_URL": secure_server.url, "BACKFILLER_TOKEN": secret}
    listed = CliRunner().invoke(app, ["list", "--team", "alpha", "-o", "json"], env=env)
    assert listed.exit_code == 0, listed.stdout
    assert first["id"] in {b["id"] for b in json.loads(listed.stdout)}
    assert second["id"] not in {b["id"] for b in json.loads(listed.stdout)}

    # Bad input is refused and changes nothing.
    for bad in ("", " padded", "x" * 201, "tab\there"):
        refused = data(
            gql(secure_server, SET_TEAM, {"i": {"id": token_id, "team": bad}}, tokens.admin)
        )
        assert refused["updateApiToken"]["userErrors"] == [
            {"code": "INVALID_ARGUMENT", "field": ["team"]}
        ], bad
        made = data(
            gql(
                secure_server,
                CREATE,
                {"i": {"name": "x", "role": "VIEWER", "team": bad}},
                tokens.admin,
            )
        )
        assert made["createApiToken"]["userErrors"] == [
            {"code": "INVALID_ARGUMENT", "field": ["team"]}
        ]
    unknown = data(
        gql(secure_server, SET_TEAM, {"i": {"id": "tok_99999", "team": "a"}}, tokens.admin)
    )
    assert unknown["updateApiToken"]["userErrors"] == [{"code": "NOT_FOUND", "field": ["id"]}]
    data(gql(secure_server, REVOKE, {"i": {"id": token_id}}, tokens.admin))
    revoked = data(gql(secure_server, SET_TEAM, {"i": {"id": token_id, "team": "a"}}, tokens.admin))
    assert revoked["updateApiToken"]["userErrors"] == [{"code": "INVALID_STATE", "field": ["id"]}]


def test_admins_set_and_remove_a_teams_limit(secure_server: LiveServer, tokens: Tokens) -> None:
    set_ = data(
        gql(
            secure_server, SET_LIMIT, {"i": {"team": "gamma", "maxConcurrentRuns": 7}}, tokens.admin
        )
    )["setTeamLimit"]
    assert set_ == {
        "teamLimit": {"team": "gamma", "maxConcurrentRuns": 7, "updatedBy": "admin"},
        "userErrors": [],
    }
    assert {"team": "gamma", "maxConcurrentRuns": 7} in data(
        gql(secure_server, LIMITS, token=tokens.admin)
    )["teamLimits"]
    for bad in (
        {"team": "gamma", "maxConcurrentRuns": 0},
        {"team": "gamma", "maxConcurrentRuns": -3},
    ):
        refused = data(gql(secure_server, SET_LIMIT, {"i": bad}, tokens.admin))["setTeamLimit"]
        assert refused["userErrors"] == [
            {"code": "INVALID_ARGUMENT", "field": ["maxConcurrentRuns"]}
        ]
    refused = data(
        gql(secure_server, SET_LIMIT, {"i": {"team": "", "maxConcurrentRuns": 1}}, tokens.admin)
    )["setTeamLimit"]
    assert refused["userErrors"] == [{"code": "INVALID_ARGUMENT", "field": ["team"]}]
    removed = data(
        gql(
            secure_server,
            SET_LIMIT,
            {"i": {"team": "gamma", "maxConcurrentRuns": None}},
            tokens.admin,
        )
    )["setTeamLimit"]
    assert removed == {"teamLimit": None, "userErrors": []}
    limits = data(gql(secure_server, LIMITS, token=tokens.admin))["teamLimits"]
    assert "gamma" not in {x["team"] for x in limits}
    # Not for operators (nor viewers).
    denied = gql(secure_server, LIMITS, token=tokens.operator).json()
    assert denied["errors"][0]["extensions"]["code"] == "FORBIDDEN"


def test_update_backfill_changes_it_with_an_event_and_an_audit_entry(
    secure_server: LiveServer, tokens: Tokens
) -> None:
    backfill = launch(secure_server, tokens.operator, maxConcurrentRuns=8)
    changed = data(
        gql(
            secure_server,
            UPDATE,
            {"i": {"id": backfill["id"], "maxConcurrentRuns": 2, "priority": 4, "title": "slower"}},
            tokens.operator,
        )
    )["updateBackfill"]
    assert changed["userErrors"] == []
    assert changed["backfill"] == {
        "id": backfill["id"],
        "maxConcurrentRuns": 2,
        "priority": 4,
        "title": "slower",
        "description": None,
    }
    # Null removes its own limit; what is absent stays.
    unlimited = data(
        gql(
            secure_server,
            UPDATE,
            {"i": {"id": backfill["id"], "maxConcurrentRuns": None}},
            tokens.operator,
        )
    )["updateBackfill"]["backfill"]
    assert (unlimited["maxConcurrentRuns"], unlimited["priority"], unlimited["title"]) == (
        None,
        4,
        "slower",
    )
    events = data(gql(secure_server, READ, {"id": backfill["id"]}, tokens.viewer))["backfill"]
    updates = [e for e in events["events"]["nodes"] if e["kind"] == "UPDATED"]
    assert {e["actor"] for e in updates} == {"operator"}
    assert "maxConcurrentRuns 8 -> 2; priority 0 -> 4; title changed" in [
        e["message"] for e in updates
    ]
    audit = data(gql(secure_server, AUDIT, token=tokens.admin))["auditLog"]["nodes"]
    assert {
        "actor": "operator",
        "subject": backfill["id"],
        "outcome": "SUCCEEDED",
        "codes": [],
    } in audit


def test_update_backfill_refuses_bad_input_alike_over_http_and_websocket(
    secure_server: LiveServer, tokens: Tokens
) -> None:
    backfill = launch(secure_server, tokens.operator, maxConcurrentRuns=8)["id"]
    finished = launch(secure_server, tokens.operator)["id"]
    data(gql(secure_server, CANCEL, {"i": {"id": finished}}, tokens.operator))
    cases: list[tuple[dict[str, Any], str, list[str] | None]] = [
        ({"id": backfill, "maxConcurrentRuns": -1}, "INVALID_ARGUMENT", ["maxConcurrentRuns"]),
        ({"id": backfill, "maxConcurrentRuns": 0}, "INVALID_ARGUMENT", ["maxConcurrentRuns"]),
        ({"id": backfill, "priority": None}, "INVALID_ARGUMENT", ["priority"]),
        ({"id": backfill, "priority": 5000}, "INVALID_ARGUMENT", ["priority"]),
        ({"id": backfill, "title": "x" * 501}, "INVALID_ARGUMENT", ["title"]),
        ({"id": backfill}, "INVALID_ARGUMENT", None),
        ({"id": "bf_999999", "priority": 1}, "BACKFILL_NOT_FOUND", ["id"]),
        ({"id": "not-an-id", "priority": 1}, "BACKFILL_NOT_FOUND", ["id"]),
        ({"id": finished, "priority": 1}, "INVALID_STATE", ["id"]),
    ]
    before = data(gql(secure_server, READ, {"id": backfill}, tokens.viewer))["backfill"]
    socket = Socket(secure_server, tokens.operator)
    try:
        for given, code, field in cases:
            over_http = data(gql(secure_server, UPDATE, {"i": given}, tokens.operator))
            over_ws = socket.answer(socket.send(UPDATE, {"i": given}))
            assert over_ws["type"] == "next", over_ws
            for answer in (over_http, over_ws["payload"]["data"]):
                payload = answer["updateBackfill"]
                assert payload["backfill"] is None, given
                assert [(e["code"], e["field"]) for e in payload["userErrors"]] == [
                    (code, field)
                ], given
    finally:
        socket.close()
    after = data(gql(secure_server, READ, {"id": backfill}, tokens.viewer))["backfill"]
    assert after == before, "a refused update changed the backfill"


def test_a_scoped_token_updates_only_the_backfills_of_its_jobs(
    secure_server: LiveServer, tokens: Tokens
) -> None:
    scoped, _ = new_token(secure_server, tokens.admin, "region-only", jobs=["region_report"])
    other = launch(secure_server, tokens.operator)["id"]
    refused = data(gql(secure_server, UPDATE, {"i": {"id": other, "priority": 9}}, scoped))
    assert [e["code"] for e in refused["updateBackfill"]["userErrors"]] == ["FORBIDDEN"]
    own = launch(secure_server, scoped, "region_report")["id"]
    allowed = data(gql(secure_server, UPDATE, {"i": {"id": own, "priority": 9}}, scoped))
    assert allowed["updateBackfill"]["backfill"]["priority"] == 9
    # Viewers may not update at all.
    viewer = gql(secure_server, UPDATE, {"i": {"id": own, "priority": 1}}, tokens.viewer).json()
    assert [e["code"] for e in viewer["data"]["updateBackfill"]["userErrors"]] == ["FORBIDDEN"]
