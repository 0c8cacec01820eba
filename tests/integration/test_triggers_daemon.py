"""The daemon's trigger tick, called directly with a frozen clock, on the real database."""

from __future__ import annotations

import asyncio
import time

import pytest
from sqlalchemy import select

from backfiller.config import Settings
from backfiller.daemon.triggers import TriggerRunner, tick_triggers
from backfiller.definitions.loading import Definitions
from backfiller.definitions.triggers import SkipReason, TriggerContext, TriggerResult, trigger
from backfiller.resolvers.context import Services
from backfiller.services.trigger_evaluation import evaluate_trigger_now
from backfiller.storage import Database
from backfiller.storage.trigger_records import (
    TriggerEvaluationRecord,
    TriggerOutcome,
    TriggerStateRecord,
)
from tests.integration import trigger_defs
from tests.support import FrozenClock, GraphQLRunner, count_rows


@pytest.fixture
def definitions() -> Definitions:
    return trigger_defs.definitions


def services_of(database: Database, clock: FrozenClock) -> Services:
    return Services(
        database=database,
        definitions=trigger_defs.definitions,
        settings=Settings(),
        clock=clock,
    )


async def cursor_of(database: Database, name: str) -> str | None:
    async with database.read() as session:
        state = await session.get(TriggerStateRecord, name)
    assert state is not None
    return state.cursor


async def evaluations_of(database: Database, name: str) -> list[TriggerEvaluationRecord]:
    async with database.read() as session:
        result = await session.execute(
            select(TriggerEvaluationRecord)
            .where(TriggerEvaluationRecord.trigger_name == name)
            .order_by(TriggerEvaluationRecord.id)
        )
        return list(result.scalars())


async def test_interval_triggers_run_when_due_and_failures_do_not_stop_the_tick(
    database: Database, clock: FrozenClock
) -> None:
    services = services_of(database, clock)
    report = await tick_triggers(services)
    # Both interval triggers are due at once; the slow one fails, the other one still runs.
    assert report.evaluated == {
        "every_minute": TriggerOutcome.SKIPPED,
        "every_minute_slow": TriggerOutcome.FAILED,
    }
    [slow] = await evaluations_of(database, "every_minute_slow")
    assert slow.error_message == "the trigger ran past its time limit of 0.5 s"
    assert slow.actor == "daemon"
    # On-demand triggers are never evaluated by the daemon.
    assert await count_rows(database, TriggerEvaluationRecord) == 2

    report = await tick_triggers(services)
    assert report.evaluated == {} and report.not_due == 2

    clock.advance(seconds=59)
    assert (await tick_triggers(services)).evaluated == {}
    clock.advance(seconds=1)
    report = await tick_triggers(services)
    assert report.evaluated["every_minute"] is TriggerOutcome.SKIPPED
    assert await cursor_of(database, "every_minute") == "2"
    assert [e.skip_reason for e in await evaluations_of(database, "every_minute")] == [
        "evaluation 1",
        "evaluation 2",
    ]


async def test_the_cursor_and_schedule_survive_a_daemon_restart(
    database_url: str, clock: FrozenClock
) -> None:
    first = Database(database_url)
    try:
        await tick_triggers(services_of(first, clock))
        clock.advance(seconds=60)
        await tick_triggers(services_of(first, clock))
        assert await cursor_of(first, "every_minute") == "2"
    finally:
        await first.dispose()
    # A new daemon: new engines, nothing kept in memory.
    second = Database(database_url)
    try:
        services = services_of(second, clock)
        assert (await tick_triggers(services)).evaluated == {}
        clock.advance(seconds=60)
        report = await tick_triggers(services)
        assert report.evaluated["every_minute"] is TriggerOutcome.SKIPPED
        assert await cursor_of(second, "every_minute") == "3"
    finally:
        await second.dispose()


async def test_a_disabled_trigger_is_not_evaluated_until_enabled_again(
    database: Database, clock: FrozenClock, gql: GraphQLRunner
) -> None:
    toggle = """
    mutation($enabled: Boolean!) {
      setTriggerEnabled(input: { name: "every_minute", enabled: $enabled }) {
        trigger { enabled } userErrors { code }
      }
    }
    """
    await gql(toggle, {"enabled": False})
    services = services_of(database, clock)
    report = await tick_triggers(services)
    assert "every_minute" not in report.evaluated
    assert report.disabled == 1
    assert await evaluations_of(database, "every_minute") == []
    await gql(toggle, {"enabled": True})
    report = await tick_triggers(services)
    assert report.evaluated["every_minute"] is TriggerOutcome.SKIPPED


async def test_two_daemons_ticking_at_once_evaluate_each_interval_once(
    database_url: str, clock: FrozenClock
) -> None:
    one, two = Database(database_url), Database(database_url)
    try:
        reports = await asyncio.gather(
            tick_triggers(services_of(one, clock)), tick_triggers(services_of(two, clock))
        )
    finally:
        await one.dispose()
        await two.dispose()
    evaluated = [name for r in reports for name in r.evaluated]
    assert sorted(evaluated) == ["every_minute", "every_minute_slow"]
    check = Database(database_url)
    try:
        assert len(await evaluations_of(check, "every_minute")) == 1
    finally:
        await check.dispose()


@trigger(interval_seconds=60)
def runner_fast(context: TriggerContext) -> TriggerResult:
    return SkipReason("fast")


@trigger(interval_seconds=60, timeout_seconds=0.5)
def runner_slow(context: TriggerContext) -> TriggerResult:
    time.sleep(2)
    return SkipReason("too late")


async def test_the_daemon_runner_never_waits_for_a_slow_trigger(
    database: Database, clock: FrozenClock
) -> None:
    definitions = Definitions(triggers=[runner_fast, runner_slow])
    runner = TriggerRunner(database, definitions, clock, settings=Settings())
    report = await runner.tick()
    # Both due evaluations started in the background; the tick did not wait for them.
    assert sorted(report.started) == ["runner_fast", "runner_slow"]
    assert report.busy is False
    clock.advance(seconds=60)
    await runner.running["runner_fast"]
    report = await runner.tick()
    # The slow one is still in its time limit: it is not started twice.
    assert report.started == ["runner_fast"] and report.still_running == 1
    await runner.wait()
    assert runner.running == {}
    outcomes = [e.outcome for e in await evaluations_of(database, "runner_slow")]
    assert outcomes == [TriggerOutcome.FAILED]
    assert len(await evaluations_of(database, "runner_fast")) == 2


async def test_without_a_service_url_the_client_of_a_trigger_says_how_to_give_one(
    database: Database, clock: FrozenClock
) -> None:
    definitions = Definitions(triggers=[trigger_defs.through_client])
    services = Services(
        database=database, definitions=definitions, settings=Settings(), clock=clock
    )
    record = await evaluate_trigger_now(
        services, trigger_defs.through_client, actor="daemon", dry_run=False
    )
    assert record.outcome is TriggerOutcome.FAILED
    assert record.error_message == (
        "RuntimeError: this evaluation has no service URL to talk to: give the daemon "
        "--api-url (or BACKFILLER_URL)"
    )
