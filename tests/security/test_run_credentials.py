"""Runs act with their own credential, minted by the daemon's claim, with no more rights than the
token that launched their backfill (capped at operator), and only while they run."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime
from typing import Any

from backfiller.daemon.ticks import DaemonState, launch_runs, plan_backfills, record_results
from backfiller.launchers import InlineLauncher
from backfiller.storage import Database
from backfiller.storage.run_credentials import forget_signing_keys
from tests.security.conftest import Tokens, audit_entries_sync, gql, token_server
from tests.security.defs import definitions
from tests.support import LAUNCH, LAUNCH_WITH_CREATOR, LiveServer

CREATE = """mutation($i: CreateApiTokenInput!) { createApiToken(input: $i) {
  secret userErrors { code } } }"""
REGION = {"target": {"job": "region_report"}, "partitions": {"all": True}}


def daily(day: int) -> dict[str, Any]:
    """A day of its own for each test: a partition has one active run at a time."""
    return {"target": {"job": "daily_sales"}, "partitions": {"keys": [f"2024-03-{day:02}"]}}


server = token_server()


def new_token(server: LiveServer, tokens: Tokens, name: str, **extra: Any) -> str:
    given = {"name": name, "role": "OPERATOR", **extra}
    found = gql(server, CREATE, {"i": given}, tokens.admin).json()["data"]["createApiToken"]
    secret: str = found["secret"]
    return secret


async def _claim_runs(url: str, hold: bool = True) -> InlineLauncher:
    """What the daemon does with a new backfill: plan it, claim its runs, hand them over."""
    forget_signing_keys()  # the module's database may have been emptied since the last one
    database = Database(url)
    launcher = InlineLauncher(definitions, hold=hold)
    state = DaemonState()
    try:
        clock = lambda: datetime.now(UTC)  # noqa: E731
        await plan_backfills(database, definitions, clock, state)
        await launch_runs(database, definitions, clock, launcher, state)
        if not hold:
            await record_results(database, definitions, clock, launcher, state)
    finally:
        await database.dispose()
    return launcher


def credential_of_a_run(server: LiveServer, url: str, token: str, given: dict[str, Any]) -> str:
    launched = gql(server, LAUNCH, {"input": given}, token).json()["data"]["launchBackfill"]
    assert launched["userErrors"] == []
    launcher = asyncio.run(_claim_runs(url))
    credentials = [t.credential for t in launcher.submitted if t.credential]
    assert credentials
    return credentials[0]


def me(server: LiveServer, credential: str) -> Any:
    return gql(server, "{ me { name role authenticated } }", token=credential)


def test_a_run_acts_as_the_launching_token_and_is_audited_as_its_run(
    server: LiveServer, tokens: Tokens, shared_database_url: str
) -> None:
    credential = credential_of_a_run(server, shared_database_url, tokens.operator, daily(1))
    assert me(server, credential).json()["data"]["me"] == {
        "name": "operator",
        "role": "OPERATOR",
        "authenticated": True,
    }
    answer = gql(server, LAUNCH_WITH_CREATOR, {"input": daily(2)}, credential).json()
    launched = answer["data"]["launchBackfill"]
    entry = audit_entries_sync(shared_database_url)[-1]
    assert (entry.operation, entry.actor) == ("launchBackfill", "operator")
    assert entry.run_id is not None and entry.run_id.startswith("run_")
    # Recorded as "run X of backfill Y, launched by Z".
    assert launched["userErrors"] == []
    assert launched["backfill"]["creator"].startswith("operator (run run_")
    assert f"run {entry.run_id} of bf_" in launched["backfill"]["creator"]


def test_a_run_of_an_admin_is_no_more_than_an_operator(
    server: LiveServer, tokens: Tokens, shared_database_url: str
) -> None:
    credential = credential_of_a_run(server, shared_database_url, tokens.admin, daily(3))
    assert me(server, credential).json()["data"]["me"]["role"] == "OPERATOR"
    refused = gql(server, CREATE, {"i": {"name": "from-a-run", "role": "ADMIN"}}, credential)
    codes = [e["code"] for e in refused.json()["data"]["createApiToken"]["userErrors"]]
    assert codes == ["FORBIDDEN"]


def test_a_run_keeps_the_job_scopes_of_its_launcher(
    server: LiveServer, tokens: Tokens, shared_database_url: str
) -> None:
    scoped = new_token(server, tokens, "run-scoped", jobs=["daily_sales"])
    credential = credential_of_a_run(server, shared_database_url, scoped, daily(4))
    refused = gql(server, LAUNCH, {"input": REGION}, credential).json()["data"]["launchBackfill"]
    assert [e["code"] for e in refused["userErrors"]] == ["FORBIDDEN"]


def test_a_run_credential_dies_with_its_launcher_and_cannot_be_forged(
    server: LiveServer, tokens: Tokens, shared_database_url: str
) -> None:
    secret = new_token(server, tokens, "run-revoked")
    credential = credential_of_a_run(server, shared_database_url, secret, daily(5))
    assert me(server, credential).status_code == 200
    payload, _, mac = credential.partition(".")
    forged = payload[:-2] + ("AA" if payload[-2:] != "AA" else "BB") + "." + mac
    assert me(server, forged).status_code == 401
    nodes = gql(server, "{ apiTokens(first: 100) { nodes { id name } } }", token=tokens.admin)
    token_id = next(
        n["id"] for n in nodes.json()["data"]["apiTokens"]["nodes"] if n["name"] == "run-revoked"
    )
    gql(
        server,
        "mutation($i: RevokeApiTokenInput!) { revokeApiToken(input: $i) { userErrors { code } } }",
        {"i": {"id": token_id}},
        tokens.admin,
    )
    assert me(server, credential).status_code == 401


def test_a_run_credential_stops_when_its_run_ends(
    server: LiveServer, tokens: Tokens, shared_database_url: str
) -> None:
    gql(server, LAUNCH, {"input": daily(6)}, tokens.operator)
    launcher = asyncio.run(_claim_runs(shared_database_url, hold=False))
    ended = [t.credential for t in launcher.submitted if t.credential]
    assert ended
    assert me(server, ended[0]).status_code == 401


CANCEL = "mutation($i: CancelBackfillInput!) { cancelBackfill(input: $i) { userErrors { code } } }"
PAUSE = "mutation($i: PauseBackfillInput!) { pauseBackfill(input: $i) { userErrors { code } } }"


def test_a_run_credential_stops_as_soon_as_its_backfill_is_canceled(
    server: LiveServer, tokens: Tokens, shared_database_url: str
) -> None:
    """No daemon runs here: the run stays queued, as a run still executing would while its
    daemon gets to stop it; only the backfill's status says it is canceled (CANCELING)."""
    launched = gql(server, LAUNCH, {"input": daily(7)}, tokens.operator).json()["data"]
    backfill = launched["launchBackfill"]["backfill"]["id"]
    launcher = asyncio.run(_claim_runs(shared_database_url))
    [credential] = [t.credential for t in launcher.submitted if t.credential]
    assert me(server, credential).status_code == 200
    # Paused, its runs go on (pause stops new claims only): the credential still works.
    paused = gql(server, PAUSE, {"i": {"id": backfill}}, tokens.operator).json()["data"]
    assert paused["pauseBackfill"]["userErrors"] == []
    assert me(server, credential).status_code == 200
    canceled = gql(server, CANCEL, {"i": {"id": backfill}}, tokens.operator).json()["data"]
    assert canceled["cancelBackfill"]["userErrors"] == []
    refused = me(server, credential)
    assert refused.status_code == 401
    assert "canceled" in refused.json()["errors"][0]["message"]
    again = gql(server, LAUNCH, {"input": daily(8)}, credential)
    assert again.status_code == 401  # nothing launched with it after the cancel
