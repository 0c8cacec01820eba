"""Triggers through the schema, on the real database: evaluate, record, list, toggle."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime
from typing import Any

import pytest
from sqlalchemy import select

from backfiller.definitions.loading import Definitions
from backfiller.domain import RunState
from backfiller.storage import Database
from backfiller.storage.records import (
    BackfillEventRecord,
    BackfillRecord,
    BackfillTagRecord,
    Base,
    PartitionStateRecord,
    SlotRecord,
)
from backfiller.storage.trigger_records import TriggerEvaluationRecord, TriggerStateRecord
from tests.integration import trigger_defs
from tests.support import GraphQLRunner, count_rows

EVALUATE = """
mutation Evaluate($name: String!, $dryRun: Boolean!) {
  evaluateTrigger(input: { name: $name, dryRun: $dryRun }) {
    evaluation {
      id trigger outcome skipReason errorMessage durationSeconds actor dryRun evaluatedAt
      backfills { id title creator tags { key value } counts { total } }
      requests {
        target { job }
        partitionSelection { range { start end } keys all }
        reprocess order title idempotencyKey tags { key value }
        preview { job total runs skipped firstPartitions }
        backfill { id }
        userErrors { code field message }
      }
    }
    userErrors { code field message }
  }
}
"""

TRIGGER = """
query Trigger($name: String!, $first: Int!, $after: String) {
  trigger(name: $name) {
    name description enabled intervalSeconds timeoutSeconds nextEvaluationAt
    lastEvaluation { id outcome }
    evaluations(first: $first, after: $after) {
      edges { cursor node { id outcome dryRun } }
      pageInfo { hasNextPage endCursor }
    }
  }
}
"""

SET_ENABLED = """
mutation SetEnabled($name: String!, $enabled: Boolean!) {
  setTriggerEnabled(input: { name: $name, enabled: $enabled }) {
    trigger { name enabled }
    userErrors { code field message }
  }
}
"""


@pytest.fixture
def definitions() -> Definitions:
    return trigger_defs.definitions


async def evaluate(gql: GraphQLRunner, name: str, dry_run: bool = False) -> dict[str, Any]:
    data = await gql(EVALUATE, {"name": name, "dryRun": dry_run})
    payload: dict[str, Any] = data["evaluateTrigger"]
    assert payload["userErrors"] == []
    evaluation: dict[str, Any] = payload["evaluation"]
    return evaluation


async def state_of(database: Database, name: str) -> TriggerStateRecord | None:
    async with database.read() as session:
        return await session.get(TriggerStateRecord, name)


async def all_counts(database: Database) -> dict[str, int]:
    return {
        mapper.class_.__tablename__: await count_rows(database, mapper.class_)
        for mapper in Base.registry.mappers
    }


async def test_a_trigger_that_returns_a_request_launches_it_like_launch_backfill(
    gql: GraphQLRunner, database: Database
) -> None:
    gql.actor = "alice"
    first = await evaluate(gql, "launches")
    assert first["outcome"] == "LAUNCHED"
    assert first["trigger"] == "launches"
    assert first["actor"] == "alice"
    assert first["dryRun"] is False
    assert first["errorMessage"] is None and first["skipReason"] is None
    assert first["durationSeconds"] >= 0
    [backfill] = first["backfills"]
    assert backfill["title"] == "evaluation 1"
    assert backfill["creator"] == "trigger:launches"
    assert backfill["tags"] == [{"key": "source", "value": "trigger"}]
    assert backfill["counts"]["total"] == 7
    [request] = first["requests"]
    assert request["backfill"] == {"id": backfill["id"]}
    assert request["partitionSelection"]["range"] == {"start": "2024-01-01", "end": "2024-01-07"}
    assert request["preview"] is None and request["userErrors"] == []
    # The cursor was saved, so the next evaluation sees it.
    state = await state_of(database, "launches")
    assert state is not None and state.cursor == "1"
    second = await evaluate(gql, "launches")
    assert second["backfills"][0]["title"] == "evaluation 2"
    assert await count_rows(database, BackfillRecord) == 2
    # The launch recorded the usual event, with the trigger as actor.
    async with database.read() as session:
        actors = set((await session.execute(select(BackfillEventRecord.actor))).scalars())
    assert actors == {"trigger:launches"}


async def test_a_skip_is_recorded_with_its_reason_and_launches_nothing(
    gql: GraphQLRunner, database: Database
) -> None:
    evaluation = await evaluate(gql, "skips")
    assert evaluation["outcome"] == "SKIPPED"
    assert evaluation["skipReason"] == "upstream export has not landed"
    assert evaluation["backfills"] == [] and evaluation["requests"] == []
    assert await count_rows(database, BackfillRecord) == 0
    state = await state_of(database, "skips")
    assert state is not None and state.cursor == "skipped once"


async def test_a_trigger_that_raises_is_failed_and_its_traceback_stays_on_the_server(
    gql: GraphQLRunner, database: Database
) -> None:
    evaluation = await evaluate(gql, "raises")
    assert evaluation["outcome"] == "FAILED"
    assert evaluation["errorMessage"] == "ValueError: the upstream table is unreadable"
    assert "Traceback" not in str(evaluation)
    async with database.read() as session:
        record = (await session.execute(select(TriggerEvaluationRecord))).scalar_one()
    assert record.error_traceback is not None
    assert "trigger_defs.py" in record.error_traceback
    assert 'raise ValueError("the upstream table is unreadable")' in record.error_traceback
    # A failed evaluation does not save the cursor the function set.
    state = await state_of(database, "raises")
    assert state is not None and state.cursor is None


async def test_a_trigger_past_its_time_limit_is_failed_and_the_service_carries_on(
    gql: GraphQLRunner,
) -> None:
    evaluation = await evaluate(gql, "sleeps")
    assert evaluation["outcome"] == "FAILED"
    assert evaluation["errorMessage"] == "the trigger ran past its time limit of 0.5 s"
    assert (await evaluate(gql, "skips"))["outcome"] == "SKIPPED"
    # Its thread cannot be killed: while it runs on, the trigger is not started again.
    again = await evaluate(gql, "sleeps")
    assert again["outcome"] == "FAILED"
    assert again["errorMessage"] == (
        "the previous evaluation is still running past its time limit; this one was not started"
    )


@pytest.mark.parametrize(
    ("name", "message"),
    [
        (
            "returns_garbage",
            "the trigger returned int; return a BackfillRequest, a list of them, or a SkipReason",
        ),
        ("reads_unknown_job", "LookupError: no job named 'no_such_job'"),
    ],
)
async def test_invalid_answers_and_reads_are_failed_with_a_message(
    gql: GraphQLRunner, name: str, message: str
) -> None:
    evaluation = await evaluate(gql, name)
    assert evaluation["outcome"] == "FAILED"
    assert evaluation["errorMessage"] == message


async def test_one_refused_request_launches_none_of_them(
    gql: GraphQLRunner, database: Database
) -> None:
    evaluation = await evaluate(gql, "refused")
    assert evaluation["outcome"] == "FAILED"
    # The message names the field as the trigger wrote it (``BackfillRequest.job``); the
    # structured user errors name it as the API does.
    assert evaluation["errorMessage"] == (
        "request 2 of 2 was refused: JOB_NOT_FOUND at job: no job named 'no_such_job'"
    )
    valid, invalid = evaluation["requests"]
    assert valid["userErrors"] == [] and valid["backfill"] is None
    assert invalid["userErrors"] == [
        {
            "code": "JOB_NOT_FOUND",
            "field": ["target", "job"],
            "message": "no job named 'no_such_job'",
        }
    ]
    assert await count_rows(database, BackfillRecord) == 0


async def test_a_dry_run_previews_and_writes_nothing_but_its_evaluation_record(
    gql: GraphQLRunner, database: Database
) -> None:
    before = await all_counts(database)
    evaluation = await evaluate(gql, "launches", dry_run=True)
    after = await all_counts(database)
    assert evaluation["outcome"] == "LAUNCHED"
    assert evaluation["dryRun"] is True
    assert evaluation["backfills"] == []
    [request] = evaluation["requests"]
    assert request["backfill"] is None
    assert request["preview"] == {
        "job": "daily",
        "total": 7,
        "runs": 7,
        "skipped": 0,
        "firstPartitions": [f"2024-01-0{d}" for d in range(1, 8)],
    }
    changed = {k: after[k] - before[k] for k in before if after[k] != before[k]}
    changed.pop("audit_log", None)  # access control audits every mutation, dry or not
    # The evaluation, and its trigger's newest (which the triggers page shows).
    assert changed == {"trigger_evaluations": 1, "trigger_latest_evaluations": 1}
    # The cursor the function set was not saved: the next real evaluation starts from scratch.
    assert await state_of(database, "launches") is None
    real = await evaluate(gql, "launches")
    assert real["backfills"][0]["title"] == "evaluation 1"


async def test_the_context_shows_partition_statuses_of_a_job(
    gql: GraphQLRunner, database: Database
) -> None:
    now = datetime(2026, 1, 1, tzinfo=UTC)
    async with database.write() as session:
        session.add_all(
            [
                PartitionStateRecord(
                    job_name="letters", partition_key="a", status=RunState.SUCCESS, updated_at=now
                ),
                PartitionStateRecord(
                    job_name="letters", partition_key="b", status=RunState.FAILED, updated_at=now
                ),
            ]
        )
    evaluation = await evaluate(gql, "missing_letters", dry_run=True)
    [request] = evaluation["requests"]
    assert request["partitionSelection"]["keys"] == ["c"]
    async with database.write() as session:
        session.add(
            PartitionStateRecord(
                job_name="letters", partition_key="c", status=RunState.RUNNING, updated_at=now
            )
        )
    evaluation = await evaluate(gql, "missing_letters")
    assert evaluation["outcome"] == "SKIPPED"
    assert evaluation["skipReason"] == "every letter ran"


async def test_the_context_shows_previous_evaluations_and_the_time(gql: GraphQLRunner) -> None:
    first = await evaluate(gql, "remembers")
    assert first["skipReason"] == "seen=0 dry_run=False now=2026-06-15T12:00:00+00:00"
    second = await evaluate(gql, "remembers", dry_run=True)
    assert second["skipReason"].startswith("seen=1 dry_run=True")


async def test_unknown_triggers_are_user_errors(gql: GraphQLRunner) -> None:
    data = await gql(EVALUATE, {"name": "nope", "dryRun": False})
    assert data["evaluateTrigger"] == {
        "evaluation": None,
        "userErrors": [
            {"code": "TRIGGER_NOT_FOUND", "field": ["name"], "message": "no trigger named 'nope'"}
        ],
    }
    data = await gql(SET_ENABLED, {"name": "nope", "enabled": False})
    assert data["setTriggerEnabled"]["userErrors"][0]["code"] == "TRIGGER_NOT_FOUND"
    data = await gql(TRIGGER, {"name": "nope", "first": 5})
    assert data["trigger"] is None


async def test_triggers_list_their_settings_and_evaluations_newest_first(
    gql: GraphQLRunner,
) -> None:
    data = await gql("{ triggers { name description intervalSeconds timeoutSeconds enabled } }")
    by_name = {t["name"]: t for t in data["triggers"]}
    assert list(by_name) == sorted(t.name for t in trigger_defs.definitions.triggers)
    assert by_name["every_minute"] == {
        "name": "every_minute",
        "description": "Counts its evaluations in its cursor.",
        "intervalSeconds": 60.0,
        "timeoutSeconds": 60.0,
        "enabled": True,
    }
    assert by_name["sleeps"]["timeoutSeconds"] == 0.5
    assert by_name["skips"]["description"] == "The upstream is never ready."
    ids = [(await evaluate(gql, "skips", dry_run=bool(i % 2)))["id"] for i in range(3)]
    seen: list[str] = []
    after = None
    while True:
        data = await gql(TRIGGER, {"name": "skips", "first": 2, "after": after})
        connection = data["trigger"]["evaluations"]
        seen += [e["node"]["id"] for e in connection["edges"]]
        if not connection["pageInfo"]["hasNextPage"]:
            break
        after = connection["pageInfo"]["endCursor"]
    assert seen == ids[::-1]
    assert data["trigger"]["lastEvaluation"] == {"id": ids[-1], "outcome": "SKIPPED"}
    node = await gql(
        "query($id: ID!) { node(id: $id) { id ... on TriggerEvaluation { trigger dryRun } } }",
        {"id": ids[1]},
    )
    assert node["node"] == {"id": ids[1], "trigger": "skips", "dryRun": True}


async def test_a_trigger_can_be_disabled_and_enabled(gql: GraphQLRunner) -> None:
    data = await gql(SET_ENABLED, {"name": "every_minute", "enabled": False})
    assert data["setTriggerEnabled"] == {
        "trigger": {"name": "every_minute", "enabled": False},
        "userErrors": [],
    }
    data = await gql(TRIGGER, {"name": "every_minute", "first": 1})
    assert data["trigger"]["enabled"] is False
    assert data["trigger"]["nextEvaluationAt"] is None
    data = await gql(SET_ENABLED, {"name": "every_minute", "enabled": True})
    assert data["setTriggerEnabled"]["trigger"]["enabled"] is True
    data = await gql(TRIGGER, {"name": "every_minute", "first": 1})
    assert data["trigger"]["nextEvaluationAt"] == "2026-06-15T12:00:00+00:00"


async def test_two_evaluations_at_once_launch_one_backfill_per_idempotency_key(
    gql: GraphQLRunner, database: Database
) -> None:
    first, second = await asyncio.gather(evaluate(gql, "keyed"), evaluate(gql, "keyed"))
    assert first["outcome"] == second["outcome"] == "LAUNCHED"
    assert first["backfills"][0]["id"] == second["backfills"][0]["id"]
    assert await count_rows(database, BackfillRecord) == 1
    assert await count_rows(database, BackfillTagRecord) == 0
    assert await count_rows(database, SlotRecord) == 0
    assert await count_rows(database, TriggerEvaluationRecord) == 2
