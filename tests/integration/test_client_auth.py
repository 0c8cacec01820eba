"""The client against a real server with token authentication."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator

import pytest

from backfiller import (
    AllPartitions,
    BackfillerAuthError,
    BackfillerUserError,
    BackfillRequest,
    Client,
)
from backfiller.client import TriggerOutcome
from tests.support import REPO, LiveServer

DEFINITIONS = "tests.integration.trigger_defs:definitions"


def create_token(database_url: str, name: str, role: str) -> str:
    args = ["token", "create", "--name", name, "--role", role, "--database", database_url]
    done = subprocess.run(
        [sys.executable, "-m", "backfiller", *args, "--json"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    token: str = json.loads(done.stdout)["token"]
    return token


@pytest.fixture
def secured(database_url: str) -> Iterator[LiveServer]:
    live = LiveServer(database_url, DEFINITIONS, auth="token")
    yield live
    live.stop()


def test_tokens_reach_the_server_and_refusals_are_typed(
    secured: LiveServer, database_url: str
) -> None:
    operator = create_token(database_url, "nightly-ci", "operator")
    viewer = create_token(database_url, "dashboard", "viewer")

    for token in (None, "bft_not-a-real-token"):
        with Client(secured.url, token=token) as anonymous, pytest.raises(BackfillerAuthError):
            anonymous.jobs()

    with Client(secured.url, token=viewer) as reader:
        assert [j.name for j in reader.jobs()] == ["customer_sync", "daily", "letters"]
        with pytest.raises(BackfillerUserError) as forbidden:
            reader.launch_backfill(BackfillRequest(job="letters", partitions=AllPartitions()))
        assert forbidden.value.codes == ("FORBIDDEN",)

    with Client(secured.url, token=operator) as client:
        backfill = client.launch_backfill(
            BackfillRequest(job="letters", partitions=AllPartitions())
        )
        assert backfill.creator == "nightly-ci"
        evaluation = client.evaluate_trigger("skips")
        assert evaluation.actor == "nightly-ci"
        with pytest.raises(BackfillerUserError) as admin_only:
            client.set_trigger_enabled("every_minute", False)
        assert admin_only.value.codes == ("FORBIDDEN",)
        # A trigger evaluated by the server gets a client without the caller's token: on a
        # server with auth, it needs BACKFILLER_TOKEN in the server's environment.
        refused = client.evaluate_trigger("through_client")
        assert refused.outcome is TriggerOutcome.FAILED
        assert refused.error_message is not None
        assert refused.error_message.startswith("BackfillerAuthError")
