"""Whose budget a launch spends, as docs/security.md says: a token's own, a run's own (apart
from the token that launched its backfill and from other runs), and without a token, the
client address's own (not one bucket shared by every caller without a name)."""

from __future__ import annotations

import asyncio
from typing import Any

import httpx

from tests.security.conftest import DEFS, Tokens, gql, token_server
from tests.security.test_run_credentials import _claim_runs, daily
from tests.support import LAUNCH, LiveServer

RATE = 3


server = token_server(extra=["--rate-limit", str(RATE)])


def codes(response: httpx.Response) -> list[str]:
    payload = response.json()["data"]["launchBackfill"]
    return [e["code"] for e in payload["userErrors"]]


def test_a_run_spends_its_own_budget_not_its_launchers(
    server: LiveServer, tokens: Tokens, shared_database_url: str
) -> None:
    create = """mutation($i: CreateApiTokenInput!) { createApiToken(input: $i) { secret } }"""
    made = gql(server, create, {"i": {"name": "budget", "role": "OPERATOR"}}, tokens.admin)
    token = made.json()["data"]["createApiToken"]["secret"]
    # The token launches two backfills; the daemon's claim gives each run a credential.
    for day in (11, 12):
        assert codes(gql(server, LAUNCH, {"input": daily(day)}, token)) == []
    launcher = asyncio.run(_claim_runs(shared_database_url))
    first, second = [t.credential for t in launcher.submitted if t.credential][:2]
    assert codes(gql(server, LAUNCH, {"input": daily(13)}, token)) == []
    assert codes(gql(server, LAUNCH, {"input": daily(14)}, token)) == ["RATE_LIMITED"]
    # The token's budget is spent; each run has a budget of its own.
    for day in (15, 16, 17):
        assert codes(gql(server, LAUNCH, {"input": daily(day)}, first)) == []
    assert codes(gql(server, LAUNCH, {"input": daily(18)}, first)) == ["RATE_LIMITED"]
    assert codes(gql(server, LAUNCH, {"input": daily(19)}, second)) == []


def launch_from(server: LiveServer, source: str, day: int) -> list[str]:
    transport = httpx.HTTPTransport(local_address=source)
    with httpx.Client(transport=transport, timeout=30) as client:
        body: dict[str, Any] = {"query": LAUNCH, "variables": {"input": daily(day)}}
        response = client.post(f"{server.url}/graphql/v1", json=body)
    return codes(response)


def test_callers_without_a_token_are_counted_per_client_address(
    shared_database_url: str, tokens: Tokens
) -> None:
    live = LiveServer(shared_database_url, DEFS, auth="none", extra=["--rate-limit", str(RATE)])
    try:
        for day in (21, 22, 23):
            assert launch_from(live, "127.0.0.1", day) == []
        assert launch_from(live, "127.0.0.1", 24) == ["RATE_LIMITED"]
        # Another local client (another address) is not refused for the first one's launches.
        assert launch_from(live, "127.0.0.2", 25) == []
    finally:
        live.stop()
