"""Cron schedules of triggers across time zones and clock changes.

The fire times are checked against an oracle that knows nothing of the implementation: it
walks the real instants minute by minute, reads each one's wall-clock time in the zone, and
fires at an instant when a matching wall-clock time has come that never came before (a time
skipped by a jump "comes" at the end of the jump; a repeated time came at its first
occurrence).
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from functools import cache
from pathlib import Path
from typing import Literal
from zoneinfo import ZoneInfo

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from backfiller.definitions.loading import DefinitionsError, load_definitions
from backfiller.definitions.schedules import (
    MAX_CATCH_UP,
    CatchUp,
    CronSchedule,
    ScheduleError,
)
from backfiller.definitions.triggers import (
    SkipReason,
    TriggerContext,
    TriggerDefinition,
    trigger,
)
from backfiller.services.trigger_schedules import plan_cron_claim

ZONES = ("Europe/Berlin", "America/New_York", "Australia/Lord_Howe")
EXPRESSIONS = (
    "0 3 * * *",
    "30 2 * * *",
    "0 2 * * *",
    "*/15 * * * *",
    "0 * * * *",
    "15,45 1-3 * * *",
    "*/10 2 * * 0",
    "0 0 * * *",
    "45 1 * * *",
    "30 1 * * 1-5",
)
MINUTE = timedelta(minutes=1)


@cache
def transitions(zone: str) -> tuple[datetime, ...]:
    """The instants (UTC, to the minute) at which ``zone`` changes its offset, 2020-2031."""
    tz = ZoneInfo(zone)
    found: list[datetime] = []
    at = datetime(2020, 1, 1, tzinfo=UTC)
    while at.year < 2031:
        nxt = at + timedelta(days=1)
        if at.astimezone(tz).utcoffset() != nxt.astimezone(tz).utcoffset():
            lo, hi = at, nxt
            while hi - lo > MINUTE:
                mid = lo + (hi - lo) / 2
                mid = mid.replace(second=0, microsecond=0)
                if mid.astimezone(tz).utcoffset() == lo.astimezone(tz).utcoffset():
                    lo = mid
                else:
                    hi = mid
            found.append(hi)
        at = nxt
    return tuple(found)


def oracle(expression: str, zone: str, start: datetime, end: datetime) -> list[datetime]:
    """Fire times in ``(start, end]`` (``start`` on a whole minute), by walking instants."""
    tz = ZoneInfo(zone)

    def wall(x: datetime) -> datetime:
        return x.astimezone(tz).replace(tzinfo=None)

    match = matcher(expression)
    # Every wall time up to ``came`` has come at or before ``start`` (a repeated hour that
    # ``start`` is in came before, at its first occurrence).
    came = max(wall(start - k * MINUTE) for k in range(4 * 60))
    out: list[datetime] = []
    x = start
    while x < end:
        x += MINUTE
        now = wall(x)
        if now <= came:
            continue  # a repeated wall time: it came before
        w = came + MINUTE
        fires = False
        while w <= now:
            fires = fires or match(w)
            w += MINUTE
        if fires:
            out.append(x)
        came = now
    return out


@cache
def matcher(expression: str) -> Callable[[datetime], bool]:
    """Whether a wall time matches ``expression`` (day of month and month ``*``): the fields
    read by hand, as cron defines them (day of week 0 is Sunday)."""
    minute, hour, dom, month, dow = expression.split()
    assert dom == "*" and month == "*"

    def values(field: str, low: int, high: int) -> set[int]:
        out: set[int] = set()
        for part in field.split(","):
            span, _, step = part.partition("/")
            if span == "*":
                a, b = low, high
            elif "-" in span:
                a, b = (int(p) for p in span.split("-"))
            else:
                a = b = int(span)
            out.update(range(a, b + 1, int(step or 1)))
        return out

    minutes, hours, days = values(minute, 0, 59), values(hour, 0, 23), values(dow, 0, 6)
    return lambda w: w.minute in minutes and w.hour in hours and (w.weekday() + 1) % 7 in days


near_a_change = st.sampled_from(ZONES).flatmap(
    lambda zone: st.tuples(
        st.just(zone),
        st.sampled_from(transitions(zone)),
        st.integers(min_value=-36 * 60, max_value=12 * 60),
    )
)


@settings(max_examples=50, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(near=near_a_change, expression=st.sampled_from(EXPRESSIONS))
def test_fire_times_are_each_wall_clock_match_once_across_clock_changes(
    near: tuple[str, datetime, int], expression: str
) -> None:
    zone, change, minutes = near
    start = change + timedelta(minutes=minutes)
    end = start + timedelta(hours=30)
    schedule = CronSchedule.of(expression, zone)
    expected = oracle(expression, zone, start, end)
    got: list[datetime] = []
    for t in schedule.fire_times_after(start, len(expected) + 1):
        if t > end:
            break
        got.append(t)
    assert got == expected
    assert all(a < b for a, b in itertools.pairwise(got))
    assert all(t > start for t in got)


@settings(max_examples=50, deadline=None)
@given(
    near=near_a_change,
    expression=st.sampled_from(EXPRESSIONS),
    seconds=st.integers(min_value=0, max_value=59),
)
def test_the_next_fire_time_after_any_instant_is_the_first_one_after_it(
    near: tuple[str, datetime, int], expression: str, seconds: int
) -> None:
    zone, change, minutes = near
    after = change + timedelta(minutes=minutes, seconds=seconds)
    schedule = CronSchedule.of(expression, zone)
    ahead = schedule.fire_times_after(after - timedelta(hours=30), 200)
    first = next(t for t in ahead if t > after)
    assert schedule.next_after(after) == first
    # Ticks in a window: those of the sequence, the latest kept.
    window = [t for t in ahead if after - timedelta(hours=6) <= t <= after]
    kept, total, following = schedule.ticks_until(after - timedelta(hours=6), after, 3)
    assert kept == window[-3:] and total == len(window) and following == first


@settings(max_examples=40, deadline=None)
@given(
    near=near_a_change,
    expression=st.sampled_from((*EXPRESSIONS, "0 0 1 * *", "0 12 29 2 *")),
    gap_minutes=st.integers(min_value=0, max_value=20 * 24 * 60),
    keep=st.sampled_from((1, 3, MAX_CATCH_UP)),
)
def test_the_latest_ticks_of_a_gap_are_those_of_walking_the_whole_gap(
    near: tuple[str, datetime, int], expression: str, gap_minutes: int, keep: int
) -> None:
    zone, change, minutes = near
    now = change + timedelta(minutes=minutes)
    first = now - timedelta(minutes=gap_minutes)
    schedule = CronSchedule.of(expression, zone)
    kept, total, following = schedule.ticks_until(first, now, keep)
    assert schedule.latest_ticks(first, now, keep) == (kept, total > len(kept), following)


@pytest.mark.parametrize(
    ("zone", "expression", "after", "expected"),
    [
        # Berlin jumps 02:00 -> 03:00 CEST: 02:30 fires once, at 03:00 CEST.
        ("Europe/Berlin", "30 2 * * *", "2026-03-28T12:00Z", ["2026-03-29T01:00Z"]),
        # Every skipped quarter and the match at 03:00 fire once together.
        (
            "Europe/Berlin",
            "*/15 2-3 * * *",
            "2026-03-29T00:50Z",
            ["2026-03-29T01:00Z", "2026-03-29T01:15Z"],
        ),
        # Berlin repeats 02:00-03:00: 02:30 fires at its first occurrence (CEST) only.
        ("Europe/Berlin", "30 2 * * *", "2026-10-24T12:00Z", ["2026-10-25T00:30Z"]),
        ("America/New_York", "30 2 * * *", "2026-03-07T12:00Z", ["2026-03-08T07:00Z"]),
        ("America/New_York", "30 1 * * *", "2026-10-31T12:00Z", ["2026-11-01T05:30Z"]),
        # Lord Howe jumps 02:00 -> 02:30 (+11:00): 02:15 fires at 02:30 local.
        ("Australia/Lord_Howe", "15 2 * * *", "2026-10-03T00:00Z", ["2026-10-03T15:30Z"]),
        # Lord Howe repeats 01:30-02:00: 01:45 fires once, at +11:00.
        ("Australia/Lord_Howe", "45 1 * * *", "2026-04-04T00:00Z", ["2026-04-04T14:45Z"]),
    ],
)
def test_skipped_and_repeated_times_fire_once(
    zone: str, expression: str, after: str, expected: list[str]
) -> None:
    schedule = CronSchedule.of(expression, zone)
    got = schedule.fire_times_after(datetime.fromisoformat(after), len(expected))
    assert got == [datetime.fromisoformat(e) for e in expected]
    if len(expected) == 1:  # a daily time: it does not fire again that day
        following = schedule.next_after(got[-1])
        assert following is not None and following - got[-1] > timedelta(hours=20)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"cron": "0 3 * *"}, "must have 5 fields"),
        ({"cron": "61 3 * * *"}, "invalid cron expression '61 3 * * *'"),
        ({"cron": "0 3 31 2 *"}, "invalid cron expression"),
        ({"cron": ""}, "non-empty cron expression"),
        ({"cron": "0 3 * * *", "timezone": "Europe/Atlantis"}, "unknown timezone"),
        ({"timezone": "Europe/Berlin"}, "give cron too"),
        ({"cron": "0 3 * * *", "interval_seconds": 60}, "interval_seconds or cron, not both"),
        ({"cron": "0 3 * * *", "catch_up": "some"}, "catch_up must be one of"),
    ],
)
def test_an_invalid_schedule_is_refused_when_the_definitions_load(
    kwargs: dict[str, object], message: str
) -> None:
    def decide(context: TriggerContext) -> SkipReason:
        return SkipReason()

    with pytest.raises(ScheduleError, match=re.escape(message)):
        trigger(**kwargs)(decide)  # type: ignore[call-overload]


def test_a_cron_trigger_declares_its_schedule() -> None:
    @trigger(cron="@daily", timezone="Europe/Berlin", catch_up="all")
    def nightly(context: TriggerContext) -> SkipReason:
        return SkipReason()

    assert (nightly.cron, nightly.timezone, nightly.catch_up) == (
        "@daily",
        "Europe/Berlin",
        CatchUp.ALL,
    )
    assert nightly.scheduled and nightly.interval_seconds is None
    assert nightly.schedule is not None and nightly.schedule.key == "cron 0 0 * * * Europe/Berlin"


def _trigger_with(catch_up: Literal["latest", "all", "none"]) -> TriggerDefinition:
    def decide(context: TriggerContext) -> SkipReason:
        return SkipReason()

    return trigger(name=f"t_{catch_up}", cron="0 * * * *", catch_up=catch_up)(decide)


def at(text: str) -> datetime:
    return datetime.fromisoformat(text)


def test_catch_up_latest_evaluates_the_latest_missed_tick_once() -> None:
    plan = plan_cron_claim(
        _trigger_with("latest"), at("2026-06-01T10:00Z"), at("2026-06-01T15:20Z")
    )
    assert plan.scheduled_at == at("2026-06-01T15:00Z")
    assert plan.next_at == at("2026-06-01T16:00Z") and plan.passed_over


def test_catch_up_all_evaluates_each_missed_tick_in_order_up_to_the_bound() -> None:
    definition = _trigger_with("all")
    plan = plan_cron_claim(definition, at("2026-06-01T10:00Z"), at("2026-06-01T12:20Z"))
    assert (plan.scheduled_at, plan.next_at, plan.passed_over) == (
        at("2026-06-01T10:00Z"),
        at("2026-06-01T11:00Z"),
        False,
    )
    # After a long gap, only the latest MAX_CATCH_UP ticks are evaluated.
    now = at("2026-06-01T10:00Z") + timedelta(hours=MAX_CATCH_UP + 49, minutes=5)
    plan = plan_cron_claim(definition, at("2026-06-01T10:00Z"), now)
    assert plan.passed_over
    assert plan.scheduled_at == at("2026-06-01T10:00Z") + timedelta(hours=50)
    assert plan.next_at == at("2026-06-01T10:00Z") + timedelta(hours=51)


def test_catch_up_none_skips_missed_ticks_but_evaluates_one_on_time() -> None:
    definition = _trigger_with("none")
    late = plan_cron_claim(definition, at("2026-06-01T10:00Z"), at("2026-06-01T12:20Z"))
    assert (late.scheduled_at, late.next_at, late.passed_over) == (
        None,
        at("2026-06-01T13:00Z"),
        True,
    )
    on_time = plan_cron_claim(definition, at("2026-06-01T10:00Z"), at("2026-06-01T12:00:30Z"))
    assert on_time.scheduled_at == at("2026-06-01T12:00Z") and on_time.passed_over


def test_definitions_with_an_invalid_zone_do_not_load_and_say_why(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "bad_cron_defs.py").write_text(
        "import backfiller\n"
        "\n"
        "@backfiller.trigger(cron='0 3 * * *', timezone='Europe/Atlantis')\n"
        "def nightly(context):\n"
        "    return backfiller.SkipReason()\n"
        "\n"
        "definitions = backfiller.Definitions(triggers=[nightly])\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(DefinitionsError) as raised:
        load_definitions("bad_cron_defs:definitions")
    message = str(raised.value)
    assert "bad_cron_defs.py:3" in message
    assert "ScheduleError: unknown timezone 'Europe/Atlantis' (use an IANA name)" in message
