"""Cron triggers in the daemon: two daemons (their trigger runners, each with its own engines)
on the real database, a stepped clock across Berlin's clock changes and across gaps with no
daemon running. Every tick is judged by the evaluations recorded: each evaluated exactly once,
for its own scheduled time, as its catch-up policy says."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

import pytest
from sqlalchemy import select
from typer.testing import CliRunner

from backfiller.cli.app import app, register_commands
from backfiller.config import Settings
from backfiller.daemon.triggers import TriggerRunner, tick_triggers
from backfiller.definitions.loading import Definitions
from backfiller.definitions.schedules import MAX_CATCH_UP, CronSchedule
from backfiller.definitions.triggers import SkipReason, TriggerContext, trigger
from backfiller.resolvers.context import Services
from backfiller.storage import Database
from backfiller.storage.trigger_records import TriggerEvaluationRecord, TriggerOutcome
from backfiller_client import Client, TriggerCatchUp
from tests.support import FrozenClock, GraphQLRunner, LiveServer

CRON = "*/30 1-3 * * *"
ZONE = "Europe/Berlin"
BERLIN = ZoneInfo(ZONE)


def says_its_tick(context: TriggerContext) -> SkipReason:
    return SkipReason(f"for {context.scheduled_local_time:%Y-%m-%d %H:%M %Z}")


cron_latest = trigger(name="cron_latest", cron=CRON, timezone=ZONE)(says_its_tick)
cron_all = trigger(name="cron_all", cron=CRON, timezone=ZONE, catch_up="all")(says_its_tick)
cron_none = trigger(name="cron_none", cron=CRON, timezone=ZONE, catch_up="none")(says_its_tick)
DEFINITIONS = Definitions(triggers=[cron_latest, cron_all, cron_none])
NAMES = ("cron_latest", "cron_all", "cron_none")


@pytest.fixture
def definitions() -> Definitions:
    return DEFINITIONS


def berlin(text: str) -> datetime:
    """A Berlin wall time with its offset written out (``2026-03-29T03:00+02:00``), in UTC."""
    return datetime.fromisoformat(text).astimezone(UTC)


class Daemons:
    """Two daemons' trigger runners, each on its own engines, ticking at once."""

    def __init__(self, database_url: str, clock: FrozenClock) -> None:
        self.databases = [Database(database_url), Database(database_url)]
        self.runners = [
            TriggerRunner(db, DEFINITIONS, clock, settings=Settings()) for db in self.databases
        ]
        self.clock = clock

    async def tick(self) -> None:
        await asyncio.gather(*(r.tick() for r in self.runners))
        await asyncio.gather(*(r.wait() for r in self.runners))

    async def run_until(self, until: datetime, every: timedelta = timedelta(minutes=15)) -> None:
        """Tick now, then step the clock and tick, until ``until``."""
        await self.tick()
        while self.clock.now < until:
            self.clock.advance(seconds=every.total_seconds())
            await self.tick()

    async def stop(self) -> None:
        for db in self.databases:
            await db.dispose()


async def ticks_evaluated(database_url: str, name: str) -> list[datetime]:
    """The scheduled times of ``name``'s evaluations, in the order they were recorded, after
    checking each evaluation was the daemon's and its function saw that scheduled time."""
    db = Database(database_url)
    try:
        async with db.read() as session:
            found: Sequence[TriggerEvaluationRecord] = (
                (
                    await session.execute(
                        select(TriggerEvaluationRecord)
                        .where(TriggerEvaluationRecord.trigger_name == name)
                        .order_by(TriggerEvaluationRecord.id)
                    )
                )
                .scalars()
                .all()
            )
    finally:
        await db.dispose()
    out: list[datetime] = []
    for record in found:
        assert record.actor == "daemon" and record.scheduled_at is not None
        at = record.scheduled_at.astimezone(UTC)
        assert record.skip_reason == f"for {at.astimezone(BERLIN):%Y-%m-%d %H:%M %Z}"
        out.append(at)
    return out


def fire_times(start: datetime, end: datetime) -> list[datetime]:
    """The schedule's ticks in ``[start, end]`` (the schedule itself is checked against an
    oracle in tests/unit/test_cron_schedules.py)."""
    ticks, _, _ = CronSchedule.of(CRON, ZONE).ticks_until(start, end, 100_000)
    return ticks


async def test_two_daemons_evaluate_every_tick_once_across_clock_changes_and_gaps(
    database_url: str,
) -> None:
    clock = FrozenClock(berlin("2026-03-29T00:45+01:00"))
    evaluated: dict[str, list[datetime]] = {n: [] for n in NAMES}

    # 1. Both daemons run across the jump forward (02:00 CET -> 03:00 CEST): 02:00 and 02:30
    # are skipped and fire once, with the 03:00 match, at 03:00 CEST.
    daemons = Daemons(database_url, clock)
    await daemons.run_until(berlin("2026-03-29T04:00+02:00"))
    await daemons.stop()
    on_time = [
        berlin("2026-03-29T01:00+01:00"),
        berlin("2026-03-29T01:30+01:00"),
        berlin("2026-03-29T03:00+02:00"),
        berlin("2026-03-29T03:30+02:00"),
    ]
    for name in NAMES:
        evaluated[name] += on_time

    # 2. No daemon for two days; two new daemons start 15 minutes after a tick.
    clock.now = berlin("2026-03-31T02:45+02:00")
    missed = fire_times(berlin("2026-03-29T04:00+02:00"), clock.now)
    assert len(missed) == 10
    daemons = Daemons(database_url, clock)
    await daemons.run_until(berlin("2026-03-31T04:00+02:00"))
    await daemons.stop()
    after = [berlin("2026-03-31T03:00+02:00"), berlin("2026-03-31T03:30+02:00")]
    evaluated["cron_latest"] += [missed[-1], *after]
    evaluated["cron_all"] += [*missed, *after]
    evaluated["cron_none"] += after

    # 3. No daemon for seven months (over MAX_CATCH_UP ticks); the daemons start before the
    # clocks go back (03:00 CEST -> 02:00 CET): 02:00 and 02:30 fire once, in summer time.
    clock.now = berlin("2026-10-25T00:45+02:00")
    missed = fire_times(berlin("2026-03-31T04:00+02:00"), clock.now)
    assert len(missed) > MAX_CATCH_UP
    daemons = Daemons(database_url, clock)
    await daemons.run_until(berlin("2026-10-25T04:10+01:00"))
    await daemons.stop()
    fall = [
        berlin("2026-10-25T01:00+02:00"),
        berlin("2026-10-25T01:30+02:00"),
        berlin("2026-10-25T02:00+02:00"),
        berlin("2026-10-25T02:30+02:00"),
        berlin("2026-10-25T03:00+01:00"),
        berlin("2026-10-25T03:30+01:00"),
    ]
    evaluated["cron_latest"] += [missed[-1], *fall]
    evaluated["cron_all"] += [*missed[-MAX_CATCH_UP:], *fall]
    evaluated["cron_none"] += fall

    for name in NAMES:
        got = await ticks_evaluated(database_url, name)
        # Exactly once each: no tick twice, none missing.
        assert sorted(got) == evaluated[name], name


async def test_the_api_gives_the_schedule_its_next_ticks_and_the_tick_of_each_evaluation(
    database: Database, gql: GraphQLRunner, clock: FrozenClock
) -> None:
    clock.now = berlin("2026-03-28T23:00+01:00")
    query = """
    query($count: Int!) {
      trigger(name: "cron_all") {
        cron timezone catchUp intervalSeconds nextEvaluationAt nextFireTimes(count: $count)
        lastEvaluation { scheduledAt }
      }
    }
    """
    found = (await gql(query, {"count": 3}))["trigger"]
    assert found == {
        "cron": CRON,
        "timezone": ZONE,
        "catchUp": "ALL",
        "intervalSeconds": None,
        "nextEvaluationAt": "2026-03-29T00:00:00+00:00",
        "nextFireTimes": [
            "2026-03-29T00:00:00+00:00",
            "2026-03-29T00:30:00+00:00",
            "2026-03-29T01:00:00+00:00",
        ],
        "lastEvaluation": None,
    }
    services = Services(
        database=database, definitions=DEFINITIONS, settings=Settings(), clock=clock
    )
    await tick_triggers(services)  # a daemon sees it first: it waits for its first tick
    clock.now = berlin("2026-03-29T03:00+02:00")
    report = await tick_triggers(services)
    assert report.evaluated == {name: TriggerOutcome.SKIPPED for name in NAMES}
    found = (await gql(query, {"count": 1}))["trigger"]
    assert found["lastEvaluation"] == {"scheduledAt": "2026-03-29T01:00:00+00:00"}
    assert found["nextEvaluationAt"] == found["nextFireTimes"][0] == "2026-03-29T01:30:00+00:00"
    # Evaluated on demand, an evaluation stands for no tick.
    evaluate = """
    mutation { evaluateTrigger(input: { name: "cron_all" }) { evaluation { scheduledAt } } }
    """
    assert (await gql(evaluate))["evaluateTrigger"]["evaluation"] == {"scheduledAt": None}

    for count in (-1, 101):
        result = await gql.raw(query, {"count": count})
        assert result.errors and "`count` must be from 0 to 100" in result.errors[0].message


async def test_ticks_that_pass_while_a_trigger_is_disabled_are_not_caught_up(
    database: Database, gql: GraphQLRunner, clock: FrozenClock
) -> None:
    toggle = """
    mutation($enabled: Boolean!) {
      setTriggerEnabled(input: { name: "cron_all", enabled: $enabled }) {
        trigger { enabled nextEvaluationAt } userErrors { code }
      }
    }
    """
    services = Services(
        database=database, definitions=DEFINITIONS, settings=Settings(), clock=clock
    )
    clock.now = berlin("2026-06-15T00:50+02:00")
    await tick_triggers(services)
    await gql(toggle, {"enabled": False})
    clock.now = berlin("2026-06-16T02:10+02:00")
    assert "cron_all" not in (await tick_triggers(services)).evaluated
    enabled = (await gql(toggle, {"enabled": True}))["setTriggerEnabled"]["trigger"]
    assert enabled["nextEvaluationAt"] == "2026-06-16T00:30:00+00:00"
    clock.now = berlin("2026-06-16T02:30+02:00")
    await tick_triggers(services)
    async with database.read() as session:
        ticks = (
            (
                await session.execute(
                    select(TriggerEvaluationRecord.scheduled_at).where(
                        TriggerEvaluationRecord.trigger_name == "cron_all"
                    )
                )
            )
            .scalars()
            .all()
        )
    assert [t.astimezone(UTC) for t in ticks if t is not None] == [berlin("2026-06-16T02:30+02:00")]


def test_the_python_client_and_the_cli_show_the_schedule(database_url: str) -> None:
    live = LiveServer(database_url, definitions="tests.integration.test_cron_triggers:DEFINITIONS")
    try:
        with Client(live.url) as client:
            found = client.trigger("cron_all")
        assert found is not None
        assert (found.cron, found.timezone, found.catch_up) == (CRON, ZONE, TriggerCatchUp.ALL)
        assert len(found.next_fire_times) == 5
        assert list(found.next_fire_times) == sorted(set(found.next_fire_times))
        assert found.next_evaluation_at == found.next_fire_times[0]
        for at in found.next_fire_times:
            local = at.astimezone(BERLIN)
            assert local.hour in (1, 2, 3) and local.minute in (0, 30)

        register_commands()
        env = {"BACKFILLER_URL": live.url, "BACKFILLER_TOKEN": None}
        listed = CliRunner().invoke(app, ["trigger", "list"], env=env)
        assert listed.exit_code == 0, listed.stderr
        assert "cron */30 1-3 * * * (Europe/Berlin, catch-up all)" in listed.stdout
        shown = CliRunner().invoke(app, ["trigger", "show", "cron_none"], env=env)
        assert shown.exit_code == 0, shown.stderr
        lines = shown.stdout.splitlines()
        assert lines[0] == "cron_none: cron */30 1-3 * * * (Europe/Berlin, catch-up none)"
        nexts = [line.removeprefix("next: ") for line in lines if line.startswith("next: ")]
        assert len(nexts) == 5 and all(n.endswith(("+01:00", "+02:00")) for n in nexts)
        missing = CliRunner().invoke(app, ["trigger", "show", "nope"], env=env)
        assert missing.exit_code == 1 and "TRIGGER_NOT_FOUND" in missing.output
    finally:
        live.stop()
