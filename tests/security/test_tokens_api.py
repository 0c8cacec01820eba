"""Tokens through the admin mutations, and who is recorded as the creator of a backfill."""

from __future__ import annotations

from typing import Any

from tests.security.conftest import Tokens, gql
from tests.support import LiveServer

CREATE = """mutation($i: CreateApiTokenInput!) { createApiToken(input: $i) {
  secret token { id name role hint active expiresAt createdBy } userErrors { code field } } }"""
REVOKE = """mutation($i: RevokeApiTokenInput!) { revokeApiToken(input: $i) {
  token { id active revokedAt } userErrors { code } } }"""
LAUNCH = """mutation($i: LaunchBackfillInput!) { launchBackfill(input: $i) {
  backfill { id creator events { nodes { kind actor } } } userErrors { code } } }"""


def data(response: Any) -> dict[str, Any]:
    body: dict[str, Any] = response.json()
    assert response.status_code == 200 and "errors" not in body, body
    found: dict[str, Any] = body["data"]
    return found


def test_tokens_made_by_an_admin_work_until_revoked(
    secure_server: LiveServer, tokens: Tokens
) -> None:
    created = data(
        gql(secure_server, CREATE, {"i": {"name": "deploy-bot", "role": "OPERATOR"}}, tokens.admin)
    )["createApiToken"]
    secret, token = created["secret"], created["token"]
    assert created["userErrors"] == []
    assert token["active"] and token["role"] == "OPERATOR" and token["createdBy"] == "admin"
    assert secret.startswith(token["hint"]) and len(token["hint"]) < 10
    me = data(gql(secure_server, "{ me { name role authenticated } }", token=secret))
    assert me["me"] == {"name": "deploy-bot", "role": "OPERATOR", "authenticated": True}
    listed = gql(
        secure_server,
        "{ apiTokens(first: 100) { nodes { id name hint active } } }",
        token=tokens.admin,
    )
    assert secret not in listed.text and "deploy-bot" in listed.text

    again = data(
        gql(secure_server, CREATE, {"i": {"name": "deploy-bot", "role": "VIEWER"}}, tokens.admin)
    )["createApiToken"]
    assert [e["code"] for e in again["userErrors"]] == ["INVALID_ARGUMENT"]
    assert again["secret"] is None
    past = {"name": "late", "role": "VIEWER", "expiresAt": "2001-01-01T00:00:00+00:00"}
    late = data(gql(secure_server, CREATE, {"i": past}, tokens.admin))["createApiToken"]
    assert late["userErrors"] == [{"code": "INVALID_ARGUMENT", "field": ["expiresAt"]}]
    for bad in ("", " padded ", "tab\there", "x" * 201):
        refused = data(
            gql(secure_server, CREATE, {"i": {"name": bad, "role": "VIEWER"}}, tokens.admin)
        )
        assert refused["createApiToken"]["userErrors"][0]["code"] == "INVALID_ARGUMENT", bad

    revoked = data(gql(secure_server, REVOKE, {"i": {"id": token["id"]}}, tokens.admin))
    assert revoked["revokeApiToken"]["token"]["active"] is False
    assert gql(secure_server, "{ me { name } }", token=secret).status_code == 401
    unknown = data(gql(secure_server, REVOKE, {"i": {"id": "tok_999999"}}, tokens.admin))
    assert unknown["revokeApiToken"]["userErrors"] == [{"code": "NOT_FOUND"}]


def test_backfills_record_the_token_and_never_a_client_supplied_run(
    secure_server: LiveServer, tokens: Tokens
) -> None:
    given = {"target": {"job": "region_report"}, "partitions": {"all": True}}
    plain = data(gql(secure_server, LAUNCH, {"i": given}, tokens.operator))["launchBackfill"]
    assert plain["backfill"]["creator"] == "operator"
    assert plain["backfill"]["events"]["nodes"][0] == {"kind": "LAUNCHED", "actor": "operator"}
    # The run header is not honoured: only a run's own credential says which run asks.
    for header in ("run_12", "admin (run run_1) forged"):
        forged = data(
            gql(
                secure_server,
                LAUNCH,
                {"i": given},
                tokens.operator,
                headers={"X-Backfiller-Run-Id": header},
            )
        )["launchBackfill"]
        assert forged["backfill"]["creator"] == "operator"
