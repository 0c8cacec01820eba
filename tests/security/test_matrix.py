"""The authorization matrix, over real HTTP: every query and mutation (GraphQL) and every REST
route, for no token, a revoked token, an expired token, a viewer, an operator and an admin.

Allowed calls work; every other one is refused with the right code and changes nothing.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from typing import Any

import httpx
import pytest

from backfiller.domain.roles import Role
from backfiller.resolvers.policy import FIELD_ROLES
from tests.security.conftest import Tokens, bearer, client_of, gql, row_counts
from tests.security.operations import all_root_fields, operation_for
from tests.security.test_roles_table import POLICY
from tests.support import LiveServer

WHO = ("none", "revoked", "expired", "viewer", "operator", "admin")
ROLE_OF = {"viewer": Role.VIEWER, "operator": Role.OPERATOR, "admin": Role.ADMIN}
AUTH_CODES = {"UNAUTHENTICATED", "FORBIDDEN", "INTERNAL_ERROR"}


def least_role(root: str, field: str) -> Role:
    role = POLICY.get(root, {}).get(field) or FIELD_ROLES[root][field]
    assert role is not None
    return role


class Helper:
    """Prepares what each call needs (fresh backfills, tokens, keys) as the admin."""

    def __init__(self, server: LiveServer, tokens: Tokens) -> None:
        self.server = server
        self.admin = tokens.admin
        self.counter = itertools.count(1)

    def call(self, query: str, variables: dict[str, Any]) -> dict[str, Any]:
        response = gql(self.server, query, variables, self.admin)
        body: dict[str, Any] = response.json()
        assert response.status_code == 200 and "errors" not in body, body
        data: dict[str, Any] = body["data"]
        return data

    def launch_input(self) -> dict[str, Any]:
        day = 1 + next(self.counter) % 28
        return {
            "target": {"job": "daily_sales"},
            "partitions": {"range": {"start": "2024-01-01", "end": f"2024-02-{day:02d}"}},
            "title": f"matrix {day}",
        }

    def backfill(self, then: str | None = None) -> str:
        data = self.call(
            "mutation($i: LaunchBackfillInput!) { launchBackfill(input: $i) { backfill { id } } }",
            {"i": self.launch_input()},
        )
        backfill_id: str = data["launchBackfill"]["backfill"]["id"]
        if then is not None:
            self.call(
                f"mutation($i: {then.title()}BackfillInput!) {{ {then}Backfill(input: $i) "
                "{ userErrors { code } } }",
                {"i": {"id": backfill_id}},
            )
        return backfill_id

    def dynamic_key(self, existing: bool) -> str:
        key = f"customer-{next(self.counter)}"
        if existing:
            self.call(
                "mutation($i: DynamicPartitionsInput!) { addDynamicPartitions(input: $i) "
                "{ keysChanged } }",
                {"i": {"name": "customers", "keys": [key]}},
            )
        return key

    def token_id(self) -> str:
        data = self.call(
            "mutation($i: CreateApiTokenInput!) { createApiToken(input: $i) { token { id } } }",
            {"i": {"name": f"victim-{next(self.counter)}", "role": "VIEWER"}},
        )
        token_id: str = data["createApiToken"]["token"]["id"]
        return token_id


# Variables that make an allowed call do its real work (and answer without userErrors).
Prepare = Callable[[Helper], dict[str, Any]]
WORKING: dict[str, Prepare] = {
    "launchBackfill": lambda h: {"input": h.launch_input()},
    "previewBackfill": lambda h: {"input": h.launch_input()},
    "pauseBackfill": lambda h: {"input": {"id": h.backfill()}},
    "resumeBackfill": lambda h: {"input": {"id": h.backfill(then="pause")}},
    "cancelBackfill": lambda h: {"input": {"id": h.backfill()}},
    "retryBackfill": lambda h: {"input": {"id": h.backfill(then="cancel"), "include": ["NOT_RUN"]}},
    "markPartitions": lambda h: {
        "input": {
            "target": {"job": "daily_sales"},
            "partitions": {"keys": [f"2024-06-{1 + next(h.counter) % 28:02d}"]},
            "status": "SUCCEEDED",
            "reason": "produced out of band",
        }
    },
    "partitionMarks": lambda h: {"job": "daily_sales"},
    "addDynamicPartitions": lambda h: {
        "input": {"name": "customers", "keys": [h.dynamic_key(existing=False)]}
    },
    "deleteDynamicPartitions": lambda h: {
        "input": {"name": "customers", "keys": [h.dynamic_key(existing=True)]}
    },
    "createApiToken": lambda h: {"input": {"name": f"made-{next(h.counter)}", "role": "OPERATOR"}},
    "revokeApiToken": lambda h: {"input": {"id": h.token_id()}},
    "updateBackfill": lambda h: {"input": {"id": h.backfill(), "priority": 3}},
    "updateApiToken": lambda h: {"input": {"id": h.token_id(), "team": "ops"}},
    "setTeamLimit": lambda h: {
        "input": {"team": f"team-{next(h.counter)}", "maxConcurrentRuns": 5}
    },
    "backfill": lambda h: {"id": h.backfill()},
    "node": lambda h: {"id": h.backfill()},
    "job": lambda h: {"name": "daily_sales"},
    "run": lambda h: {"id": "run_1"},
}
# What an allowed call adds, table -> rows (beside the audit entry of a mutation).
ADDS: dict[str, dict[str, int]] = {
    "launchBackfill": {"backfills": 1},
    "retryBackfill": {"backfills": 1},
    "markPartitions": {"partition_marks": 1},
    "addDynamicPartitions": {"dynamic_partitions": 1},
    "deleteDynamicPartitions": {"dynamic_partitions": -1},
    "createApiToken": {"api_tokens": 1},
    "setTeamLimit": {"team_limits": 1},
}


def codes_of(body: dict[str, Any], field: str, is_mutation: bool) -> list[str]:
    codes = [e.get("extensions", {}).get("code") for e in body.get("errors") or []]
    data = body.get("data") or {}
    if is_mutation and isinstance(data.get(field), dict):
        codes += [e["code"] for e in data[field].get("userErrors") or []]
    return [c for c in codes if c is not None]


def test_graphql_matrix(
    secure_server: LiveServer, tokens: Tokens, shared_database_url: str
) -> None:
    helper = Helper(secure_server, tokens)
    checked = 0
    for (root, field), who in itertools.product(all_root_fields("Query", "Mutation"), WHO):
        is_mutation = root == "Mutation"
        prepare = WORKING.get(field)
        op = operation_for(root, field, prepare(helper) if prepare else None)
        before = row_counts(shared_database_url)
        response = gql(secure_server, op.document, op.variables, tokens.of(who))
        after = row_counts(shared_database_url)
        case = f"{root}.{field} as {who}: {response.text[:300]}"
        if who in ("none", "revoked", "expired"):
            assert response.status_code == 401, case
            assert response.headers["www-authenticate"].startswith("Bearer"), case
            assert codes_of(response.json(), field, is_mutation) == ["UNAUTHENTICATED"], case
            assert after == before, case
        elif ROLE_OF[who].allows(least_role(root, field)):
            assert response.status_code == 200, case
            body = response.json()
            codes = codes_of(body, field, is_mutation)
            assert not AUTH_CODES & set(codes), case
            if prepare is not None:
                assert codes == [], case
                assert body["data"][field] is not None or field == "run", case
                for table, delta in ADDS.get(field, {}).items():
                    assert after[table] == before[table] + delta, case
            if is_mutation:
                assert after["audit_log"] == before["audit_log"] + 1, case
        else:
            assert response.status_code == 200, case
            body = response.json()
            assert codes_of(body, field, is_mutation) == ["FORBIDDEN"], case
            if is_mutation:
                payload = body["data"][field]
                assert (
                    [k for k, v in payload.items() if v and k != "__typename"] == ["userErrors"]
                    or field == "addDynamicPartitions"
                    or field == "deleteDynamicPartitions"
                ), case
                before["audit_log"] += 1  # the refusal itself is audited
            else:
                assert (body.get("data") or {}).get(field) is None, case
            assert after == before, case
        checked += 1
    assert checked == len(all_root_fields("Query", "Mutation")) * len(WHO)


REST = "/api/v1"


def rest_cases(helper: Helper) -> list[tuple[str, str, Callable[[], Any], Role, int, str]]:
    """(method, path maker, body maker, least role, success status, name)."""
    return [
        ("GET", "/backfills", lambda: None, Role.VIEWER, 200, "list"),
        ("GET", "/backfills/{id}", lambda: None, Role.VIEWER, 200, "get"),
        ("GET", "/openapi.json", lambda: None, Role.VIEWER, 200, "openapi"),
        ("POST", "/backfills", helper.launch_input, Role.OPERATOR, 201, "launch"),
        ("POST", "/backfills:preview", helper.launch_input, Role.OPERATOR, 200, "preview"),
        ("POST", "/backfills/{id}/pause", lambda: {}, Role.OPERATOR, 200, "pause"),
        ("POST", "/backfills/{paused}/resume", lambda: {}, Role.OPERATOR, 200, "resume"),
        ("POST", "/backfills/{id}/cancel", lambda: {}, Role.OPERATOR, 200, "cancel"),
        ("POST", "/backfills/{id}/update", lambda: {"priority": 2}, Role.OPERATOR, 200, "update"),
        (
            "POST",
            "/backfills/{canceled}/retry",
            lambda: {"include": ["NOT_RUN"]},
            Role.OPERATOR,
            201,
            "retry",
        ),
    ]


def test_rest_matrix(secure_server: LiveServer, tokens: Tokens, shared_database_url: str) -> None:
    helper = Helper(secure_server, tokens)
    for (method, template, body, least, success, name), who in itertools.product(
        rest_cases(helper), WHO
    ):
        path = template.format(
            id=helper.backfill(),
            paused=helper.backfill(then="pause") if "{paused}" in template else "",
            canceled=helper.backfill(then="cancel") if "{canceled}" in template else "",
        )
        payload = body()
        before = row_counts(shared_database_url, ignore=("audit_log",))
        response = client_of(secure_server).request(
            method, f"{REST}{path}", json=payload, headers=bearer(tokens.of(who))
        )
        after = row_counts(shared_database_url, ignore=("audit_log",))
        case = f"{method} {path} ({name}) as {who}: {response.text[:300]}"
        if who in ("none", "revoked", "expired"):
            assert response.status_code == 401, case
            assert response.json()["userErrors"][0]["code"] == "UNAUTHENTICATED", case
            assert after == before, case
        elif ROLE_OF[who].allows(least):
            assert response.status_code == success, case
        else:
            assert response.status_code == 403, case
            assert [e["code"] for e in response.json()["userErrors"]] == ["FORBIDDEN"], case
            assert after == before, case


@pytest.mark.parametrize("who", ["none", "revoked", "expired"])
def test_401_says_why_and_how(secure_server: LiveServer, tokens: Tokens, who: str) -> None:
    response = gql(secure_server, "{ apiVersion }", token=tokens.of(who))
    assert response.status_code == 401
    message = response.json()["errors"][0]["message"]
    expected = {"none": "Authorization: Bearer", "revoked": "revoked", "expired": "expired"}
    assert expected[who] in message
    if who != "none":
        assert 'error="invalid_token"' in response.headers["www-authenticate"]


def test_a_malformed_authorization_header_is_401(secure_server: LiveServer) -> None:
    for value in ("Basic dXNlcjpwYXNz", "Bearer", "Bearer " + "x" * 5000, "bearer bft_nope"):
        response = httpx.post(
            f"{secure_server.url}/graphql/v1",
            json={"query": "{ apiVersion }"},
            headers={"Authorization": value},
        )
        assert response.status_code == 401, value


def socket_codes(answer: dict[str, Any], field: str, is_mutation: bool) -> list[str]:
    payload = answer["payload"]
    if isinstance(payload, list):  # an `error` message: refused before it ran
        return [e.get("extensions", {}).get("code") for e in payload]
    return codes_of(payload, field, is_mutation)


def run_credential(server: LiveServer, tokens: Tokens, url: str) -> str:
    """The credential the daemon gives a run of a backfill the operator launched."""
    from tests.security.test_run_credentials import credential_of_a_run

    given = {"target": {"job": "daily_sales"}, "partitions": {"keys": ["2024-04-30"]}}
    return credential_of_a_run(server, url, tokens.operator, given)


def test_websocket_matrix(
    secure_server: LiveServer, tokens: Tokens, shared_database_url: str
) -> None:
    """Every query, mutation and subscription over a WebSocket, for every role and for a run's
    own credential (an operator): the same answers as over HTTP. Sockets without a valid token
    are refused at ``connection_init``."""
    from websockets.exceptions import ConnectionClosed

    from tests.security.sockets import Socket

    for who in ("none", "revoked", "expired"):
        with pytest.raises((AssertionError, ConnectionClosed)):
            Socket(secure_server, tokens.of(who))
    helper = Helper(secure_server, tokens)
    secrets = {w: tokens.of(w) for w in ("viewer", "operator", "admin")}
    secrets["run"] = run_credential(secure_server, tokens, shared_database_url)
    roles = {**ROLE_OF, "run": Role.OPERATOR}
    fields = all_root_fields("Query", "Mutation", "Subscription")
    for who, secret in secrets.items():
        sock = Socket(secure_server, secret)
        for root, field in fields:
            is_mutation = root == "Mutation"
            prepare = WORKING.get(field)
            if root == "Subscription":
                variables: dict[str, Any] | None = {"id": helper.backfill()}
            else:
                variables = prepare(helper) if prepare else None
            op = operation_for(root, field, variables)
            before = row_counts(shared_database_url)
            codes = socket_codes(sock.ask(op.document, op.variables), field, is_mutation)
            case = f"{root}.{field} as {who} over a socket: {codes}"
            if roles[who].allows(least_role(root, field)):
                assert not AUTH_CODES & set(codes), case
                if prepare is not None:
                    assert codes == [], case
            else:
                assert codes == ["FORBIDDEN"], case
                after = row_counts(shared_database_url)
                if is_mutation:
                    before["audit_log"] += 1
                assert after == before, case
        sock.close()
