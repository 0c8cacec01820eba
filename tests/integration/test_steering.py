"""pause, resume, cancel and retry: allowed transitions as data, everything else refused."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from sqlalchemy import create_engine, text, update
from sqlalchemy.pool import NullPool

from backfiller.daemon.ticks import DaemonState, plan_backfills
from backfiller.definitions.loading import Definitions
from backfiller.domain import BackfillState, SlotState
from backfiller.storage import Database
from backfiller.storage.engine import sync_database_url
from backfiller.storage.records import BackfillEventRecord, BackfillRecord, SlotRecord
from tests.support import FrozenClock, GraphQLRunner, count_rows, launch


def steer_query(verb: str) -> str:
    return f"""
    mutation($id: ID!) {{
      result: {verb}Backfill(input: {{id: $id}}) {{
        backfill {{ id status counts {{ total pending canceled }} endedAt }}
        userErrors {{ field code message }}
      }}
    }}
    """


async def launched(gql: GraphQLRunner, **extra: Any) -> str:
    return await launch(gql, "daily_sales", "2024-01-01", "2024-01-10", **extra)


async def force_state(
    database: Database, backfill_id: str, state: BackfillState, **values: Any
) -> None:
    async with database.write() as session:
        await session.execute(
            update(BackfillRecord)
            .where(BackfillRecord.id == int(backfill_id.removeprefix("bf_")))
            .values(status=state, **values)
        )


# (verb, from-state) -> resulting status, or the error code. Declared as data.
TRANSITIONS: list[tuple[str, BackfillState, str]] = [
    ("pause", BackfillState.REQUESTED, "PAUSED"),
    ("pause", BackfillState.RUNNING, "PAUSED"),
    ("pause", BackfillState.PAUSED, "PAUSED"),
    ("pause", BackfillState.CANCELING, "INVALID_STATE"),
    ("pause", BackfillState.CANCELED, "INVALID_STATE"),
    ("pause", BackfillState.COMPLETED_SUCCESS, "INVALID_STATE"),
    ("pause", BackfillState.COMPLETED_FAILED, "INVALID_STATE"),
    ("pause", BackfillState.FAILED, "INVALID_STATE"),
    ("resume", BackfillState.PAUSED, "REQUESTED"),
    ("resume", BackfillState.REQUESTED, "REQUESTED"),
    ("resume", BackfillState.RUNNING, "RUNNING"),
    ("resume", BackfillState.CANCELING, "INVALID_STATE"),
    ("resume", BackfillState.CANCELED, "INVALID_STATE"),
    ("resume", BackfillState.COMPLETED_SUCCESS, "INVALID_STATE"),
    ("resume", BackfillState.FAILED, "INVALID_STATE"),
    ("cancel", BackfillState.REQUESTED, "CANCELED"),
    ("cancel", BackfillState.RUNNING, "CANCELED"),
    ("cancel", BackfillState.PAUSED, "CANCELED"),
    ("cancel", BackfillState.CANCELING, "CANCELING"),
    ("cancel", BackfillState.CANCELED, "CANCELED"),
    ("cancel", BackfillState.COMPLETED_SUCCESS, "INVALID_STATE"),
    ("cancel", BackfillState.COMPLETED_FAILED, "INVALID_STATE"),
    ("cancel", BackfillState.FAILED, "INVALID_STATE"),
]


@pytest.mark.parametrize(
    ("verb", "start", "expected"), TRANSITIONS, ids=[f"{v}-{s.value}" for v, s, _ in TRANSITIONS]
)
async def test_transition_table(
    gql: GraphQLRunner, database: Database, verb: str, start: BackfillState, expected: str
) -> None:
    backfill_id = await launched(gql)
    await force_state(database, backfill_id, start)
    events_before = await count_rows(database, BackfillEventRecord)
    payload = (await gql(steer_query(verb), {"id": backfill_id}))["result"]
    if expected == "INVALID_STATE":
        assert payload["backfill"] is None
        assert [(e["code"], e["field"]) for e in payload["userErrors"]] == [
            ("INVALID_STATE", ["id"])
        ]
        assert await count_rows(database, BackfillEventRecord) == events_before
        async with database.read() as session:
            record = await session.get(BackfillRecord, int(backfill_id[3:]))
            assert record is not None and record.status is start
        return
    assert payload["userErrors"] == []
    assert payload["backfill"]["status"] == expected


async def test_cancel_with_nothing_in_flight_counts_every_partition_canceled(
    gql: GraphQLRunner, database: Database
) -> None:
    backfill_id = await launched(gql)
    payload = (await gql(steer_query("cancel"), {"id": backfill_id}))["result"]
    assert payload["backfill"]["status"] == "CANCELED"
    assert payload["backfill"]["counts"] == {"total": 10, "pending": 0, "canceled": 10}
    assert payload["backfill"]["endedAt"] is not None
    ranges = await gql(
        "query($id: ID!) { backfill(id: $id) { partitionStatusRanges { status count } } }",
        {"id": backfill_id},
    )
    assert ranges["backfill"]["partitionStatusRanges"] == [{"status": "CANCELED", "count": 10}]


async def test_cancel_with_runs_in_flight_asks_the_daemon(
    gql: GraphQLRunner, database: Database
) -> None:
    backfill_id = await launched(gql)
    await force_state(database, backfill_id, BackfillState.RUNNING, running=1, pending=9)
    payload = (await gql(steer_query("cancel"), {"id": backfill_id}))["result"]
    assert payload["backfill"]["status"] == "CANCELING"


async def test_a_cancel_racing_a_claim_waits_for_its_slots_and_deadlocks_nothing(
    gql: GraphQLRunner,
    database: Database,
    database_url: str,
    definitions: Definitions,
    clock: FrozenClock,
) -> None:
    """A claim locks its slot, then the backfill row (its counters). A cancel that found
    nothing in flight used to lock the row, then the slots: with a claim between its two
    steps, PostgreSQL found a deadlock and the cancel answered INTERNAL_ERROR."""
    if not database_url.startswith("postgresql"):
        pytest.skip("SQLite has one writer at a time: no claim is under way during a cancel")
    backfill_id = await launched(gql)
    await plan_backfills(database, definitions, clock, DaemonState())
    pk = int(backfill_id.removeprefix("bf_"))
    engine = create_engine(sync_database_url(database_url), poolclass=NullPool)
    try:
        with engine.connect() as claim, engine.connect() as watch:
            slot = claim.execute(
                text(
                    "SELECT id FROM slots WHERE backfill_id = :b AND status = 'pending' "
                    "ORDER BY id LIMIT 1 FOR UPDATE"
                ),
                {"b": pk},
            ).scalar_one()
            cancel = asyncio.create_task(gql(steer_query("cancel"), {"id": backfill_id}))
            waiting = "SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock'"
            for _ in range(500):  # until the cancel waits for a lock the claim holds
                await asyncio.sleep(0.01)
                if watch.execute(text(waiting)).scalar_one():
                    break
            watch.rollback()

            def finish_claim() -> None:
                claim.execute(text("UPDATE slots SET status = 'queued' WHERE id = :s"), {"s": slot})
                claim.execute(
                    text(
                        "UPDATE backfills SET pending = pending - 1, queued = queued + 1 "
                        "WHERE id = :b"
                    ),
                    {"b": pk},
                )
                claim.commit()

            await asyncio.to_thread(finish_claim)
            payload = (await cancel)["result"]
    finally:
        engine.dispose()
    assert payload["userErrors"] == []
    assert payload["backfill"]["status"] == "CANCELING"  # the claimed run is in flight
    assert payload["backfill"]["counts"]["canceled"] == 0


@pytest.mark.parametrize("verb", ["pause", "resume", "cancel"])
@pytest.mark.parametrize("raw", ["bf_999", "nope", "run_1", "bf_-1", "bf_" + "9" * 40])
async def test_unknown_ids_are_backfill_not_found(
    gql: GraphQLRunner, database: Database, verb: str, raw: str
) -> None:
    payload = (await gql(steer_query(verb), {"id": raw}))["result"]
    assert [(e["code"], e["field"]) for e in payload["userErrors"]] == [
        ("BACKFILL_NOT_FOUND", ["id"])
    ]
    assert await count_rows(database, BackfillEventRecord) == 0


async def test_steering_is_recorded_as_events(gql: GraphQLRunner) -> None:
    gql.actor = "alice"
    backfill_id = await launched(gql)
    await gql(steer_query("pause"), {"id": backfill_id})
    await gql(steer_query("resume"), {"id": backfill_id})
    await gql(steer_query("cancel"), {"id": backfill_id})
    data = await gql(
        "query($id: ID!) { backfill(id: $id) { creator events { nodes { kind actor } } } }",
        {"id": backfill_id},
    )
    assert data["backfill"]["creator"] == "alice"
    assert data["backfill"]["events"]["nodes"] == [
        {"kind": kind, "actor": "alice"} for kind in ("LAUNCHED", "PAUSED", "RESUMED", "CANCELED")
    ]


RETRY = """
mutation($id: ID!, $include: [RetryInclude!]) {
  retryBackfill(input: {id: $id, include: $include}) {
    backfill {
      id status reprocess partitionSelection { keys } counts { total }
      parent { id retries { id } }
    }
    userErrors { field code }
  }
}
"""


async def seed_slots(database: Database, backfill_id: str, states: list[SlotState]) -> None:
    pk = int(backfill_id[3:])
    async with database.write() as session:
        record = await session.get(BackfillRecord, pk)
        assert record is not None
        for position, state in enumerate(states):
            session.add(
                SlotRecord(
                    backfill_id=pk,
                    position=position,
                    partition_key=f"2024-01-{position + 1:02d}",
                    status=state,
                    attempts=1,
                    updated_at=record.created_at,
                )
            )
        record.planned = len(states)


async def test_retry_launches_failed_partitions_as_a_child(
    gql: GraphQLRunner, database: Database
) -> None:
    backfill_id = await launched(gql)
    states = [SlotState.SUCCEEDED, SlotState.FAILED, SlotState.CANCELED, SlotState.FAILED]
    await seed_slots(database, backfill_id, states)
    await force_state(database, backfill_id, BackfillState.RUNNING)
    early = (await gql(RETRY, {"id": backfill_id}))["retryBackfill"]
    assert [e["code"] for e in early["userErrors"]] == ["INVALID_STATE"]
    await force_state(database, backfill_id, BackfillState.CANCELED)
    payload = (await gql(RETRY, {"id": backfill_id}))["retryBackfill"]
    assert payload["userErrors"] == []
    child = payload["backfill"]
    assert child["partitionSelection"]["keys"] == ["2024-01-02", "2024-01-04"]
    assert child["reprocess"] == "ALL"
    assert child["parent"]["id"] == backfill_id
    assert child["parent"]["retries"] == [{"id": child["id"]}]
    wider = (await gql(RETRY, {"id": backfill_id, "include": ["CANCELED", "NOT_RUN"]}))[
        "retryBackfill"
    ]["backfill"]
    # Canceled slot 3 plus the six positions never planned.
    assert wider["counts"]["total"] == 7
    assert wider["partitionSelection"]["keys"][:2] == ["2024-01-03", "2024-01-05"]


async def test_retry_with_nothing_to_retry_is_empty_selection(
    gql: GraphQLRunner, database: Database
) -> None:
    backfill_id = await launched(gql)
    await seed_slots(database, backfill_id, [SlotState.SUCCEEDED] * 10)
    await force_state(database, backfill_id, BackfillState.COMPLETED_SUCCESS)
    payload = (await gql(RETRY, {"id": backfill_id}))["retryBackfill"]
    assert [e["code"] for e in payload["userErrors"]] == ["EMPTY_SELECTION"]
    assert await count_rows(database, BackfillRecord) == 1
