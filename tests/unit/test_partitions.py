"""Tests of backfiller.definitions.partitions: examples, DST, errors and properties."""

from __future__ import annotations

import time
from datetime import UTC, date, datetime, timedelta
from zoneinfo import ZoneInfo

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from backfiller.definitions.partitions import (
    DailyPartitions,
    DynamicPartitions,
    HourlyPartitions,
    KeySpace,
    MonthlyPartitions,
    PartitionsDefinition,
    PartitionsKind,
    StaticPartitions,
    TimePartitions,
    WeeklyPartitions,
)

ZONES = [
    "UTC",
    "America/New_York",
    "Europe/Berlin",
    "Australia/Lord_Howe",
    "Asia/Kathmandu",
    "America/Santiago",
]
NOW = datetime(2030, 1, 1, tzinfo=UTC)
PROPS = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def utc(year: int, month: int, day: int, hour: int = 0, minute: int = 0) -> datetime:
    return datetime(year, month, day, hour, minute, tzinfo=UTC)


def all_keys(space: KeySpace) -> list[str]:
    return space.keys(0, len(space))


# ------------------------------------------------------------------------------------------
# Examples


def test_daily_example_leap_year() -> None:
    space = DailyPartitions(start="2024-01-01").key_space(utc(2024, 3, 1))
    assert len(space) == 60
    assert space.key_at(0) == "2024-01-01"
    assert space.key_at(59) == "2024-02-29"
    assert space.index_of("2024-02-29") == 59
    assert space.index_of("2024-03-01") is None
    assert space.window("2024-02-29") == (utc(2024, 2, 29), utc(2024, 3, 1))


def test_open_ended_only_complete_windows() -> None:
    definition = DailyPartitions(start="2024-01-01")
    assert len(definition.key_space(utc(2024, 1, 1, 23, 59))) == 0
    assert len(definition.key_space(utc(2024, 1, 2))) == 1
    assert len(definition.key_space(utc(2023, 6, 1))) == 0
    assert len(DailyPartitions(start="2024-01-01", end_offset=1).key_space(utc(2024, 1, 1, 5))) == 1


def test_fixed_end_ignores_now() -> None:
    definition = DailyPartitions(start="2024-01-01", end="2024-01-11")
    assert len(definition.key_space(utc(2000, 1, 1))) == 10
    assert len(definition.key_space(utc(2100, 1, 1))) == 10


def test_unaligned_bounds_round_inwards() -> None:
    definition = DailyPartitions(start=datetime(2024, 1, 1, 5), end=datetime(2024, 1, 5, 12))
    assert all_keys(definition.key_space(NOW)) == ["2024-01-02", "2024-01-03", "2024-01-04"]
    weekly = WeeklyPartitions(start="2024-01-03", end="2024-02-01")  # Wednesday
    assert all_keys(weekly.key_space(NOW)) == ["2024-01-08", "2024-01-15", "2024-01-22"]


def test_daily_dst_lengths() -> None:
    space = DailyPartitions(start="2024-03-09", end="2024-03-12", timezone="America/New_York")
    lengths = [
        w[1] - w[0] for k in all_keys(space.key_space(NOW)) if (w := space.key_space(NOW).window(k))
    ]
    assert lengths == [timedelta(hours=24), timedelta(hours=23), timedelta(hours=24)]
    fall = DailyPartitions(start="2024-10-27", end="2024-10-28", timezone="Europe/Berlin")
    window = fall.key_space(NOW).window("2024-10-27")
    assert window is not None
    assert window[1] - window[0] == timedelta(hours=25)


def test_daily_midnight_gap_starts_at_transition() -> None:
    # America/Santiago springs forward at 00:00 -> 01:00 on 2024-09-08.
    space = DailyPartitions(start="2024-09-07", end="2024-09-10", timezone="America/Santiago")
    ks = space.key_space(NOW)
    window = ks.window("2024-09-08")
    assert window is not None
    local = window[0].astimezone(ZoneInfo("America/Santiago"))
    assert (local.hour, local.minute) == (1, 0)
    assert window[1] - window[0] == timedelta(hours=23)


def test_hourly_new_york_fall_back_and_spring_forward() -> None:
    fall = HourlyPartitions(start="2024-11-03", end="2024-11-03-04:00", timezone="America/New_York")
    ks = fall.key_space(NOW)
    assert all_keys(ks) == [
        "2024-11-03-00:00",
        "2024-11-03-01:00",
        "2024-11-03-01:00-05:00",
        "2024-11-03-02:00",
        "2024-11-03-03:00",
    ]
    assert ks.window("2024-11-03-01:00-05:00") == (
        datetime(2024, 11, 3, 6, tzinfo=UTC),
        datetime(2024, 11, 3, 7, tzinfo=UTC),
    )
    assert fall.validate_key("2024-11-03-01:00-04:00") is not None  # first occurrence: no suffix
    assert fall.validate_key("2024-11-03-02:00-05:00") is not None  # not a repeated hour
    spring = HourlyPartitions(start="2024-03-10", end="2024-03-10-04:00", timezone="US/Eastern")
    assert all_keys(spring.key_space(NOW)) == [
        "2024-03-10-00:00",
        "2024-03-10-01:00",
        "2024-03-10-03:00",
    ]
    message = spring.validate_key("2024-03-10-02:00")
    assert message is not None and "does not exist" in message
    assert spring.key_space(NOW).index_of("2024-03-10-02:00") is None


def test_hourly_lord_howe_half_hour_dst() -> None:
    # Falls back 02:00 (+11) -> 01:30 (+10:30) on 2024-04-07; springs 02:00 -> 02:30 on 10-06.
    fall = HourlyPartitions(
        start="2024-04-07", end="2024-04-07-04:00", timezone="Australia/Lord_Howe"
    )
    ks = fall.key_space(NOW)
    assert all_keys(ks) == [f"2024-04-07-0{h}:00" for h in range(4)]
    window = ks.window("2024-04-07-01:00")
    assert window is not None and window[1] - window[0] == timedelta(minutes=90)
    spring = HourlyPartitions(
        start="2024-10-06", end="2024-10-06-04:00", timezone="Australia/Lord_Howe"
    )
    ks = spring.key_space(NOW)
    assert all_keys(ks) == ["2024-10-06-00:00", "2024-10-06-01:00", "2024-10-06-03:00"]
    window = ks.window("2024-10-06-01:00")
    assert window is not None and window[1] - window[0] == timedelta(minutes=90)


def test_hourly_kathmandu_quarter_hour_offset() -> None:
    ks = HourlyPartitions(start="2024-01-01", timezone="Asia/Kathmandu").key_space(NOW)
    window = ks.window("2024-01-01-06:00")
    assert window is not None
    assert window[0].astimezone(UTC) == utc(2024, 1, 1, 0, 15)


def test_monthly_and_weekly() -> None:
    monthly = MonthlyPartitions(start="2024-01-15", day_of_month=15)
    ks = monthly.key_space(utc(2024, 4, 1))
    assert all_keys(ks) == ["2024-01-15", "2024-02-15"]
    assert monthly.validate_key("2024-02-14") is not None
    feb = MonthlyPartitions(start="2024-02-01", end="2024-03-01").key_space(NOW)
    window = feb.window("2024-02-01")
    assert window is not None and window[1] - window[0] == timedelta(days=29)
    sunday = WeeklyPartitions(start="2024-01-01", day_of_week=6)
    assert sunday.key_space(utc(2024, 1, 15)).key_at(0) == "2024-01-07"
    assert sunday.validate_key("2024-01-08") is not None
    assert sunday.describe().cron == "0 0 * * 0"


def test_validate_key_messages() -> None:
    daily = DailyPartitions(start="2024-01-01")
    assert daily.validate_key("2024-01-31") is None
    for bad in ["2024-13-01", "2023-02-29", "2024-1-01", "20240101", "", "2024-01-01 "]:
        message = daily.validate_key(bad)
        assert isinstance(message, str) and message, bad
        assert daily.key_space(NOW).index_of(bad) is None
    assert daily.validate_key("2024-02-29") is None
    assert daily.validate_key("1999-01-01") is None  # well-formed, just outside the space
    assert daily.key_space(NOW).index_of("1999-01-01") is None
    hourly = HourlyPartitions(start="2024-01-01")
    assert hourly.validate_key("2024-01-01-10:30") is not None
    assert hourly.validate_key("2024-01-01-10:00+00:00") is not None
    assert StaticPartitions(["a"]).validate_key("zzz") is None
    assert DynamicPartitions("d").validate_key("zzz") is None


def test_custom_fmt() -> None:
    definition = DailyPartitions(start="20240101", fmt="%Y%m%d")
    ks = definition.key_space(utc(2024, 1, 4))
    assert all_keys(ks) == ["20240101", "20240102", "20240103"]
    hourly = HourlyPartitions(start="2024-01-01", fmt="%Y%m%dT%H", timezone="America/New_York")
    ks = hourly.key_space(utc(2024, 12, 1))
    assert ks.index_of("20241103T01-05:00") == ks.index_of("20241103T01") + 1  # type: ignore[operator]


@pytest.mark.parametrize(
    ("factory", "match"),
    [
        (lambda: DailyPartitions(start="2024-01-01", timezone="Mars/Olympus"), "timezone"),
        (lambda: DailyPartitions(start="2024-01-01", end="2023-01-01"), "after start"),
        (lambda: DailyPartitions(start="2024-01-01", end="2024-01-01"), "after start"),
        (lambda: DailyPartitions(start="2024-01-01", fmt="%Y-%m"), "fmt"),
        (lambda: HourlyPartitions(start="2024-01-01", fmt="%Y-%m-%d"), "fmt"),
        (lambda: DailyPartitions(start="yesterday"), "start"),
        (lambda: MonthlyPartitions(start="2024-01-01", day_of_month=29), "day_of_month"),
        (lambda: MonthlyPartitions(start="2024-01-01", day_of_month=0), "day_of_month"),
        (lambda: WeeklyPartitions(start="2024-01-01", day_of_week=7), "day_of_week"),
        (lambda: TimePartitions("not a cron", start="2024-01-01"), "cron"),
        (lambda: TimePartitions("0 0 30 2 *", start="2024-01-01"), "never fires"),
        (lambda: StaticPartitions(["a", "b", "a"]), "duplicate"),
        (lambda: StaticPartitions(["a", ""]), "empty"),
        (lambda: StaticPartitions("abc"), "sequence"),
        (lambda: DynamicPartitions(""), "name"),
    ],
)
def test_constructor_errors(factory: object, match: str) -> None:
    with pytest.raises(ValueError, match=match):
        factory()  # type: ignore[operator]


def test_naive_now_rejected() -> None:
    with pytest.raises(ValueError, match="aware"):
        DailyPartitions(start="2024-01-01").key_space(datetime(2024, 2, 1))


def test_static_and_dynamic() -> None:
    static = StaticPartitions(["us", "eu", "apac"])
    ks = static.key_space(NOW)
    assert len(ks) == 3 and ks.key_at(1) == "eu" and ks.index_of("apac") == 2
    assert ks.index_of("mars") is None and ks.window("us") is None
    assert ks.keys(-5, 2) == ["us", "eu"] and ks.keys(2, 99) == ["apac"] and ks.keys(2, 1) == []
    with pytest.raises(IndexError):
        ks.key_at(3)
    with pytest.raises(IndexError):
        ks.key_at(-1)
    assert static.describe().static_keys == ("us", "eu", "apac")
    assert static.kind is PartitionsKind.STATIC
    dynamic = DynamicPartitions("customers")
    ks = dynamic.key_space(NOW, ["c", "a", "b"])
    assert all_keys(ks) == ["c", "a", "b"] and ks.index_of("b") == 2
    assert len(dynamic.key_space(NOW)) == 0
    with pytest.raises(ValueError, match="duplicate"):
        dynamic.key_space(NOW, ["a", "a"])
    assert dynamic.describe().dynamic_name == "customers"


def test_fingerprints() -> None:
    a = DailyPartitions(start="2024-01-01", timezone="Europe/Berlin")
    b = DailyPartitions(start=date(2024, 1, 1), timezone="Europe/Berlin")
    assert a.fingerprint() == b.fingerprint()
    assert a.fingerprint() != DailyPartitions(start="2024-01-01").fingerprint()
    assert (
        a.fingerprint()
        != DailyPartitions(start="2024-01-02", timezone="Europe/Berlin").fingerprint()
    )
    others = {
        HourlyPartitions(start="2024-01-01").fingerprint(),
        WeeklyPartitions(start="2024-01-01").fingerprint(),
        MonthlyPartitions(start="2024-01-01").fingerprint(),
        TimePartitions("0 0 * * *", start="2024-01-01").fingerprint(),
        StaticPartitions(["a"]).fingerprint(),
        DynamicPartitions("a").fingerprint(),
        DailyPartitions(start="2024-01-01").fingerprint(),
    }
    assert len(others) == 7
    # Pinned: must never change between processes or releases.
    assert DailyPartitions(start="2024-01-01").fingerprint() == "10a784275f3bf360"
    assert StaticPartitions(["a", "b"]).fingerprint() == StaticPartitions(("a", "b")).fingerprint()


def test_describe() -> None:
    description = HourlyPartitions(start="2024-01-01", timezone="Europe/Berlin").describe()
    assert description.kind is PartitionsKind.TIME
    assert description.cadence == "hourly"
    assert description.start == datetime(2024, 1, 1, tzinfo=ZoneInfo("Europe/Berlin"))
    assert description.end is None and description.timezone == "Europe/Berlin"
    assert description.fmt == "%Y-%m-%d-%H:%M"
    assert TimePartitions("@daily", start="2024-01-01").describe().cron == "0 0 * * *"


def test_million_hourly_partitions_are_constant_time() -> None:
    definition = HourlyPartitions(start="1900-01-01", timezone="Europe/Berlin")
    space = definition.key_space(NOW)  # warms the per-zone tables
    assert len(space) > 1_000_000
    started = time.perf_counter()
    for _ in range(100):
        space = definition.key_space(NOW)
        key = space.key_at(999_999)
        assert space.index_of(key) == 999_999
    assert (time.perf_counter() - started) / 100 < 0.001
    started = time.perf_counter()
    daily = DailyPartitions(start="1000-01-01")
    space = daily.key_space(NOW)
    assert space.index_of(space.key_at(len(space) - 1)) == len(space) - 1
    assert time.perf_counter() - started < 0.01


def test_cron_dst_rules() -> None:
    fixed = TimePartitions("30 1 * * *", start="2024-11-01", timezone="America/New_York")
    assert all_keys(fixed.key_space(utc(2024, 11, 6))) == [
        "2024-11-01-01:30",
        "2024-11-02-01:30",
        "2024-11-03-01:30",
        "2024-11-04-01:30",
    ]
    skipped = TimePartitions("30 2 * * *", start="2024-03-09", timezone="America/New_York")
    ks = skipped.key_space(utc(2024, 3, 13))
    assert all_keys(ks)[:3] == ["2024-03-09-02:30", "2024-03-10-03:30", "2024-03-11-02:30"]
    every = TimePartitions("0,30 * * * *", start="2024-11-03", timezone="America/New_York")
    ks = every.key_space(utc(2024, 11, 3, 8))
    assert all_keys(ks)[2:6] == [
        "2024-11-03-01:00",
        "2024-11-03-01:30",
        "2024-11-03-01:00-05:00",
        "2024-11-03-01:30-05:00",
    ]


@pytest.mark.parametrize("zone", ZONES)
def test_cron_matches_hourly_and_daily(zone: str) -> None:
    now = utc(2025, 1, 1)
    hourly = HourlyPartitions(start="2024-01-01", timezone=zone).key_space(now)
    cron_hourly = TimePartitions("0 * * * *", start="2024-01-01", timezone=zone).key_space(now)
    assert all_keys(hourly) == all_keys(cron_hourly)
    if zone != "America/Santiago":  # its midnight does not always exist
        daily = DailyPartitions(start="2024-01-01", timezone=zone).key_space(now)
        cron_daily = TimePartitions(
            "0 0 * * *", start="2024-01-01", timezone=zone, fmt="%Y-%m-%d"
        ).key_space(now)
        assert all_keys(daily) == all_keys(cron_daily)


def test_cron_with_end_and_offset() -> None:
    definition = TimePartitions("0 12 * * 1-5", start="2024-01-01", end="2024-01-08")
    assert len(definition.key_space(NOW)) == 4  # Mon..Thu; Friday's window ends on Monday
    definition = TimePartitions("0 12 * * *", start="2024-01-01", end_offset=1)
    ks = definition.key_space(utc(2024, 1, 3, 13))
    assert all_keys(ks)[-1] == "2024-01-03-12:00"


# ------------------------------------------------------------------------------------------
# Properties against brute force


def brute_starts(cadence: str, zone: str, lo: int, hi: int, param: int) -> list[int]:
    """Window starts in [lo, hi] found by scanning every minute (independent of the module)."""
    tz = ZoneInfo(zone)
    out: list[int] = []
    last_period: tuple[int, ...] | None = None
    for x in range(lo - 40 * 86400 if cadence != "hourly" else lo, hi + 1, 60):
        local = datetime.fromtimestamp(x, tz)
        if cadence == "hourly":
            if local.minute == 0 and x >= lo:
                out.append(x)
            continue
        d = local.date()
        if cadence == "daily":
            period: tuple[int, ...] = (d.toordinal(),)
        elif cadence == "weekly":
            period = ((d.toordinal() - 1 - param) // 7,)
        else:
            months = d.year * 12 + d.month - 1 - (0 if d.day >= param else 1)
            period = (months,)
        if last_period is not None and period > last_period and x >= lo:
            out.append(x)
        if last_period is None or period > last_period:
            last_period = period
    return out


def make(
    cadence: str, start: datetime, end: datetime | None, zone: str, param: int
) -> PartitionsDefinition:
    if cadence == "hourly":
        return HourlyPartitions(start=start, end=end, timezone=zone)
    if cadence == "daily":
        return DailyPartitions(start=start, end=end, timezone=zone)
    if cadence == "weekly":
        return WeeklyPartitions(start=start, end=end, timezone=zone, day_of_week=param)
    return MonthlyPartitions(start=start, end=end, timezone=zone, day_of_month=param)


SPAN_MINUTES = {
    "hourly": 3 * 24 * 60,
    "daily": 20 * 24 * 60,
    "weekly": 50 * 24 * 60,
    "monthly": 200 * 24 * 60,
}
TRANSITION_DAYS = [
    date(2024, 3, 10),
    date(2024, 11, 3),
    date(2024, 3, 31),
    date(2024, 10, 27),
    date(2024, 4, 7),
    date(2024, 10, 6),
    date(2024, 9, 8),
    date(2024, 2, 29),
    date(2023, 3, 1),
    date(2100, 2, 28),
    date(1986, 1, 1),
    date(1995, 6, 15),
]


@st.composite
def ranges(draw: st.DrawFn) -> tuple[str, str, int, datetime, datetime]:
    cadence = draw(st.sampled_from(["hourly", "daily", "weekly", "monthly"]))
    zone = draw(st.sampled_from(ZONES))
    param = draw(st.integers(0, 6)) if cadence == "weekly" else draw(st.integers(1, 28))
    anchor = draw(st.sampled_from(TRANSITION_DAYS))
    span = SPAN_MINUTES[cadence]
    start_minute = draw(st.integers(-span, span // 2))
    length = draw(st.integers(1, span))
    base = datetime(anchor.year, anchor.month, anchor.day, tzinfo=UTC)
    start = base + timedelta(minutes=start_minute)
    return cadence, zone, param, start, start + timedelta(minutes=length)


@PROPS
@given(ranges())
def test_matches_brute_force(case: tuple[str, str, int, datetime, datetime]) -> None:
    cadence, zone, param, start, end = case
    definition = make(cadence, start, end, zone, param)
    space = definition.key_space(NOW)
    starts = brute_starts(cadence, zone, int(start.timestamp()), int(end.timestamp()), param)
    assert len(space) == max(0, len(starts) - 1)
    keys = all_keys(space)
    assert len(set(keys)) == len(keys)
    for i, key in enumerate(keys):
        assert space.key_at(i) == key
        assert space.index_of(key) == i
        assert definition.validate_key(key) is None
        window = space.window(key)
        assert window is not None
        assert window[0].tzinfo is not None
        assert (int(window[0].timestamp()), int(window[1].timestamp())) == (
            starts[i],
            starts[i + 1],
        )
        assert window[0].utcoffset() == timedelta(0)
    # The space is a contiguous slice of a wider one.
    wider = make(cadence, start - timedelta(days=40), end + timedelta(days=40), zone, param)
    wide = wider.key_space(NOW)
    if keys:
        first = wide.index_of(keys[0])
        assert first is not None
        assert wide.keys(first, first + len(keys)) == keys
        assert wide.index_of(keys[-1]) == first + len(keys) - 1


@PROPS
@given(ranges(), st.integers(-3, 3))
def test_open_ended_equals_fixed_end(
    case: tuple[str, str, int, datetime, datetime], offset: int
) -> None:
    cadence, zone, param, start, now = case
    open_space = make(cadence, start, None, zone, param).key_space(now)
    fixed = make(cadence, start, now, zone, param).key_space(NOW)
    assert all_keys(open_space) == all_keys(fixed)
    if cadence == "hourly":
        shifted = HourlyPartitions(start=start, timezone=zone, end_offset=offset).key_space(now)
        assert len(shifted) == max(0, len(fixed) + offset)
        longer = HourlyPartitions(start=start, timezone=zone, end_offset=3).key_space(now)
        assert all_keys(shifted) == all_keys(longer)[: len(shifted)]
    for key in all_keys(open_space):
        window = open_space.window(key)
        assert window is not None and window[1] <= now


@PROPS
@given(
    st.sampled_from(ZONES),
    st.datetimes(min_value=datetime(1990, 1, 1), max_value=datetime(2060, 1, 1)),
    st.sampled_from(["hourly", "daily", "weekly", "monthly"]),
    st.integers(0, 5000),
)
def test_round_trip_over_long_ranges(zone: str, start: datetime, cadence: str, index: int) -> None:
    definition = make(cadence, start, None, zone, 3)
    space = definition.key_space(utc(2090, 1, 1))
    index = index % len(space)
    key = space.key_at(index)
    assert space.index_of(key) == index
    if index + 1 < len(space):
        nxt = space.key_at(index + 1)
        this_window, next_window = space.window(key), space.window(nxt)
        assert this_window is not None and next_window is not None
        assert this_window[1] == next_window[0]
        assert this_window[0] < this_window[1]


@PROPS
@given(st.text(max_size=25))
def test_arbitrary_strings_are_never_partitions_by_accident(text: str) -> None:
    for definition in (
        DailyPartitions(start="2024-01-01"),
        HourlyPartitions(start="2024-01-01", timezone="America/New_York"),
        TimePartitions("*/15 * * * *", start="2024-01-01", end="2024-01-03"),
    ):
        space = definition.key_space(utc(2024, 1, 3))
        index = space.index_of(text)
        if index is not None:
            assert space.key_at(index) == text
        if definition.validate_key(text) is not None:
            assert index is None


@PROPS
@given(
    st.sampled_from(ZONES),
    st.sampled_from(TRANSITION_DAYS),
    st.integers(-3 * 24 * 60, 24 * 60),
    st.sampled_from(["*/30 * * * *", "15 * * * *", "0 */3 * * *", "30 2 * * *", "0 0 * * 1-5"]),
)
def test_cron_properties(zone: str, anchor: date, shift: int, expr: str) -> None:
    start = datetime(anchor.year, anchor.month, anchor.day, tzinfo=UTC) + timedelta(minutes=shift)
    end = start + timedelta(days=4)
    definition = TimePartitions(expr, start=start, end=end, timezone=zone)
    space = definition.key_space(NOW)
    keys = all_keys(space)
    windows = [space.window(k) for k in keys]
    for i, key in enumerate(keys):
        assert space.index_of(key) == i and definition.validate_key(key) is None
        window = windows[i]
        assert window is not None and start <= window[0] < window[1] <= end
        if i:
            previous = windows[i - 1]
            assert previous is not None and previous[1] == window[0]
    if expr in ("*/30 * * * *", "15 * * * *"):  # fire every hour: compare with a minute scan
        tz = ZoneInfo(zone)
        minutes = {0, 30} if expr.startswith("*/30") else {15}
        lo, hi = int(start.timestamp()), int(end.timestamp())
        expected = [
            x
            for x in range(lo - lo % 60 + (60 if lo % 60 else 0), hi + 1, 60)
            if datetime.fromtimestamp(x, tz).minute in minutes
        ]
        got = [int(w[0].timestamp()) for w in windows if w is not None]
        assert got == expected[:-1]


def near_misses(key: str) -> list[str]:
    """Strings next to a key: other digits, other offsets, non-canonical spellings."""
    out = [key + "+00:00", key + "-05:00", key[:-1], key + "0", " " + key, key.replace("-", "/")]
    for i, ch in enumerate(key):
        if ch.isdigit():
            for digit in ("0", "1", "3", "9"):
                out.append(key[:i] + digit + key[i + 1 :])
    return out


@PROPS
@given(ranges(), st.data())
def test_index_of_is_the_position_in_the_list_of_keys(
    case: tuple[str, str, int, datetime, datetime], data: st.DataObject
) -> None:
    """index_of (which reads numeric keys without strptime or zone arithmetic) answers what a
    scan of the space's keys answers, for keys, keys of a wider space and near misses."""
    cadence, zone, param, start, end = case
    space = make(cadence, start, end, zone, param).key_space(NOW)
    wide = make(cadence, start - timedelta(days=3), end + timedelta(days=3), zone, param)
    wide_keys = all_keys(wide.key_space(NOW))
    keys = all_keys(space)
    position = {key: i for i, key in enumerate(keys)}
    picked = data.draw(st.lists(st.sampled_from(wide_keys), max_size=6)) if wide_keys else []
    for key in picked:
        for candidate in [key, *near_misses(key)]:
            assert space.index_of(candidate) == position.get(candidate), candidate


@PROPS
@given(
    st.lists(st.text(min_size=1, max_size=8), min_size=0, max_size=30, unique=True),
    st.integers(-5, 40),
    st.integers(-5, 40),
)
def test_list_spaces_slice_like_python_lists(keys: list[str], start: int, stop: int) -> None:
    space = StaticPartitions(keys).key_space(NOW)
    assert len(space) == len(keys)
    lo, hi = (min(max(i, 0), len(keys)) for i in (start, stop))
    assert space.keys(start, stop) == keys[lo:hi]
    for i, key in enumerate(keys):
        assert space.key_at(i) == key and space.index_of(key) == i
    with pytest.raises(IndexError):
        space.key_at(len(keys))


@PROPS
@given(ranges(), st.integers(-3, 60), st.integers(-3, 60))
def test_time_spaces_slice_like_their_list_of_keys(
    case: tuple[str, str, int, datetime, datetime], start: int, stop: int
) -> None:
    cadence, zone, param, first, end = case
    space = make(cadence, first, end, zone, param).key_space(NOW)
    keys = all_keys(space)
    lo, hi = (min(max(i, 0), len(keys)) for i in (start, stop))
    assert space.keys(start, stop) == keys[lo:hi]
    assert [space.key_at(i) for i in range(len(keys))] == keys
