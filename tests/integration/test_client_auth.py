"""The client against a real server with token authentication."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from backfiller import (
    AllPartitions,
    BackfillerAuthError,
    BackfillerUserError,
    BackfillRequest,
    Client,
)
from backfiller.client import TriggerOutcome
from backfiller.domain.roles import Role
from backfiller.storage import Database
from backfiller.storage.auth import NewToken, TokenRepository
from tests.support import LiveServer, live_server

DEFINITIONS = "tests.integration.trigger_defs:definitions"


async def create_token(database: Database, name: str, role: str) -> str:
    async with database.write() as session:
        _record, secret = await TokenRepository(session).add(
            NewToken(name=name, role=Role(role), expires_at=None, created_by="test"),
            datetime.now(UTC),
        )
    return secret


secured = live_server(DEFINITIONS, auth="token")


async def test_tokens_reach_the_server_and_refusals_are_typed(
    secured: LiveServer, database: Database
) -> None:
    operator = await create_token(database, "nightly-ci", "operator")
    viewer = await create_token(database, "dashboard", "viewer")

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
        # A trigger the server evaluates reaches the API as whoever pressed the button.
        pressed = client.evaluate_trigger("through_client")
        assert pressed.outcome is TriggerOutcome.LAUNCHED, pressed.error_message
        [launched] = pressed.backfills
        assert launched.creator == "trigger:through_client"
        assert pressed.actor == "nightly-ci"

    with Client(secured.url, token=viewer) as reader:
        # ... so a viewer cannot launch through a trigger either (evaluating is an operator's).
        with pytest.raises(BackfillerUserError) as not_allowed:
            reader.evaluate_trigger("through_client")
        assert not_allowed.value.codes == ("FORBIDDEN",)
