"""The pure parts of access control: run credentials' signature, job scopes, hosts, actors."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from backfiller.config import AuthMode, Settings
from backfiller.domain.roles import Role
from backfiller.resolvers.access import Principal, actor_of, run_of
from backfiller.resolvers.policy import decide, job_refusal, scope_refusal
from backfiller.storage.run_credentials import RunClaims, launcher_of, sign, verify
from backfiller.web.auth import allowed_hosts, host_allowed

KEY = bytes(range(32))
CLAIMS = RunClaims(12, 3, "ci", 7, Role.OPERATOR, datetime(2030, 1, 1, tzinfo=UTC))


def test_a_run_credential_verifies_only_with_its_key_and_unchanged() -> None:
    credential = sign(KEY, CLAIMS)
    assert credential.startswith("bfr_")
    assert verify(KEY, credential) == CLAIMS
    assert verify(bytes(32), credential) is None
    payload, _, mac = credential.partition(".")
    assert verify(KEY, payload + "x." + mac) is None
    for junk in ("", "bfr_", "bfr_.", "bfr_a.b", "bft_x", "bfr_" + "A" * 2000, credential + "x"):
        assert verify(KEY, junk) is None


@pytest.mark.parametrize(
    ("creator", "launcher"),
    [
        (None, None),
        ("ci", "ci"),
        ("ci (run run_12 of bf_3)", "ci"),
        ("run run_12 of bf_3", None),
        ("trigger:nightly", "trigger:nightly"),
    ],
)
def test_the_launching_token_of_a_creator(creator: str | None, launcher: str | None) -> None:
    assert launcher_of(creator) == launcher


def test_job_scopes_limit_launches_and_triggers() -> None:
    scoped = Principal("sales", Role.OPERATOR, token_id=1, jobs=frozenset({"daily_sales"}))
    assert job_refusal(scoped, "daily_sales") is None
    refused = job_refusal(scoped, "region_report")
    assert refused is not None and refused.code.name == "FORBIDDEN"
    assert decide(scoped, "Mutation", "launchBackfill") is None
    assert decide(scoped, "Mutation", "evaluateTrigger") is not None
    unscoped = Principal("ops", Role.OPERATOR, token_id=2)
    assert job_refusal(unscoped, "region_report") is None
    assert decide(unscoped, "Mutation", "evaluateTrigger") is None


def test_a_runs_actor_names_the_run_and_its_launcher() -> None:
    run = Principal("ci", Role.OPERATOR, run_id=12, backfill_id=3)
    assert actor_of(run) == "ci (run run_12 of bf_3)" and run_of(run) == "run_12"
    anonymous_run = Principal(None, Role.OPERATOR, run_id=12, backfill_id=3)
    assert actor_of(anonymous_run) == "run run_12 of bf_3"
    assert actor_of(Principal("ci", Role.ADMIN, token_id=1)) == "ci"


@pytest.mark.parametrize(
    ("host", "auth", "extra", "allowed"),
    [
        ("127.0.0.1:8000", "none", (), True),
        ("localhost:8000", "none", (), True),
        ("app.localhost", "none", (), True),
        ("[::1]:8000", "none", (), True),
        ("evil.example", "none", (), False),
        ("evil.example:8000", "none", (), False),
        ("127.0.0.1.evil.example", "none", (), False),
        (None, "none", (), False),
        ("backfiller.test", "none", ("backfiller.test",), True),
        ("BACKFILLER.test:443", "none", ("backfiller.test",), True),
        ("evil.example", "token", (), True),
        ("evil.example", "token", ("backfiller.test",), False),
    ],
)
def test_hosts(host: str | None, auth: str, extra: tuple[str, ...], allowed: bool) -> None:
    settings = Settings(auth_mode=AuthMode(auth), allowed_hosts=extra)
    assert host_allowed(host, allowed_hosts(settings)) is allowed


def test_scopes_name_jobs_and_assets_of_a_stored_backfill() -> None:
    scoped = Principal("clicks", Role.OPERATOR, token_id=1, jobs=frozenset({"raw_clicks"}))
    assert scope_refusal(scoped, ["raw_clicks"], "pause") is None
    refused = scope_refusal(scoped, ["raw_clicks", "click_report"], "cancel")
    assert refused is not None and refused.field == ["id"]
    assert "cancel" in refused.message and "click_report" in refused.message
    assert scope_refusal(Principal("ops", Role.OPERATOR, token_id=2), ["x"], "retry") is None
