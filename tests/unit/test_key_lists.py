"""A key list read in one pass (``KeySpace.indexes_of``) answers what ``index_of`` answers for
each key, for every kind of partitions, across clock changes, formats and near misses; and
``resolve_selection`` of a key list keeps its errors and its order."""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta

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
    StaticPartitions,
    TimePartitions,
    WeeklyPartitions,
)
from backfiller.domain import SelectionKind
from backfiller.planning import Selection, SelectionProblem, resolve_selection

ZONES = [
    "UTC",
    "America/New_York",
    "Europe/Berlin",
    "Australia/Lord_Howe",
    "Asia/Kathmandu",
    "America/Santiago",
    "Pacific/Apia",
]
NOW = datetime(2030, 1, 1, tzinfo=UTC)
ANCHORS = [
    date(2024, 3, 10),
    date(2024, 11, 3),
    date(2024, 3, 31),
    date(2024, 10, 27),
    date(2024, 4, 7),
    date(2024, 10, 6),
    date(2024, 9, 8),
    date(2011, 12, 29),
    date(1986, 1, 1),
    date(2024, 2, 29),
]
PROPS = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
CRONS = ["* * * * *", "*/30 * * * *", "15 */6 * * 1-5", "30 2 * * *", "0 0 * * *"]


def definition_of(
    kind: str, zone: str, start: datetime, end: datetime, fmt: str | None
) -> PartitionsDefinition:
    if kind == "hourly":
        return HourlyPartitions(start=start, end=end, timezone=zone, fmt=fmt or "%Y-%m-%d-%H:%M")
    if kind == "daily":
        return DailyPartitions(start=start, end=end, timezone=zone, fmt=fmt or "%Y-%m-%d")
    if kind == "weekly":
        return WeeklyPartitions(start=start, end=end, timezone=zone, day_of_week=2)
    if kind == "monthly":
        return MonthlyPartitions(start=start, end=end, timezone=zone, day_of_month=3)
    return TimePartitions(kind, start=start, end=end, timezone=zone, fmt=fmt or "%Y-%m-%d-%H:%M")


def near_misses(key: str) -> list[str]:
    out = [key + "+00:00", key + "-05:00", key[:-1], key + "0", " " + key, key.replace("-", "/")]
    for i, ch in enumerate(key):
        if ch.isdigit():
            out += [key[:i] + digit + key[i + 1 :] for digit in ("0", "1", "3", "9")]
    return out


def check_space(space: KeySpace, candidates: list[str]) -> None:
    assert space.indexes_of(candidates) == [space.index_of(k) for k in candidates]


KINDS_AND_FORMATS = [
    ("hourly", None),
    ("hourly", "%H:%M %d.%m.%Y"),
    ("hourly", "%Y%m%d%H"),
    ("daily", None),
    ("daily", "%d/%m/%Y"),
    ("weekly", None),
    ("monthly", None),
    *[(cron, None) for cron in CRONS],
    ("*/30 * * * *", "%Y-%m-%dT%H:%M:%S"),
]


@PROPS
@given(
    st.sampled_from(KINDS_AND_FORMATS),
    st.sampled_from(ZONES),
    st.sampled_from(ANCHORS),
    st.integers(-3 * 24, 24),
    st.data(),
)
def test_indexes_of_is_index_of_of_each_key(
    kind_fmt: tuple[str, str | None], zone: str, anchor: date, shift: int, data: st.DataObject
) -> None:
    kind, fmt = kind_fmt
    days = {"hourly": 4, "daily": 60, "weekly": 200, "monthly": 900}.get(kind, 4)
    start = datetime(anchor.year, anchor.month, anchor.day, tzinfo=UTC) + timedelta(hours=shift)
    definition = definition_of(kind, zone, start, start + timedelta(days=days), fmt)
    space = definition.key_space(NOW)
    keys = space.keys(0, len(space))
    wider = definition_of(
        kind, zone, start - timedelta(days=3), start + timedelta(days=days + 3), fmt
    )
    wide_keys = wider.key_space(NOW).keys(0, 10**6)
    picked = data.draw(st.lists(st.sampled_from(wide_keys), max_size=8)) if wide_keys else []
    candidates = keys + [c for key in picked for c in [key, *near_misses(key)]]
    check_space(space, candidates)
    check_space(space, list(reversed(candidates)))
    assert space.indexes_of(keys) == list(range(len(keys)))


@PROPS
@given(st.lists(st.text(max_size=20), max_size=30))
def test_arbitrary_strings(texts: list[str]) -> None:
    for definition in (
        DailyPartitions(start="2024-01-01"),
        HourlyPartitions(start="2024-01-01", timezone="America/New_York"),
        TimePartitions("*/15 * * * *", start="2024-01-01", end="2024-01-03"),
        StaticPartitions(["a", "b", "2024-01-01"]),
    ):
        check_space(definition.key_space(datetime(2024, 1, 3, tzinfo=UTC)), texts)


@pytest.mark.parametrize(
    ("expr", "zone", "day"),
    [
        ("30 2 * * *", "America/New_York", date(2024, 3, 10)),  # 02:30 skipped: fires at 03:30
        ("30 1 * * *", "America/New_York", date(2024, 11, 3)),  # 01:30 twice: fires once
        ("0 * * * *", "America/New_York", date(2024, 11, 3)),  # the repeated hour fires twice
        ("0 0 * * *", "America/Santiago", date(2024, 9, 8)),  # midnight skipped
        ("0 12 * * *", "Pacific/Apia", date(2011, 12, 29)),  # the next day skipped whole
    ],
)
def test_cron_days_with_a_clock_change(expr: str, zone: str, day: date) -> None:
    start = datetime(day.year, day.month, day.day, tzinfo=UTC) - timedelta(days=3)
    space = TimePartitions(expr, start=start, end=start + timedelta(days=7), timezone=zone)
    space_keys = space.key_space(NOW)
    keys = space_keys.keys(0, len(space_keys))
    walls = [f"{day.isoformat()}-{h:02d}:{m:02d}" for h in range(24) for m in (0, 30)]
    check_space(space_keys, keys + walls + [k[:16] for k in keys])


@pytest.mark.parametrize(
    ("zone", "day"),
    [
        ("America/New_York", date(2024, 3, 10)),
        ("America/New_York", date(2024, 11, 3)),
        ("America/Santiago", date(2024, 9, 8)),
        ("America/Santiago", date(2024, 4, 7)),
        ("Australia/Lord_Howe", date(2024, 10, 6)),
        ("Pacific/Apia", date(2011, 12, 29)),
    ],
)
def test_hourly_days_with_a_clock_change(zone: str, day: date) -> None:
    start = datetime(day.year, day.month, day.day, tzinfo=UTC) - timedelta(days=2)
    space = HourlyPartitions(start=start, end=start + timedelta(days=5), timezone=zone)
    space_keys = space.key_space(NOW)
    keys = space_keys.keys(0, len(space_keys))
    walls = [
        f"{(day + timedelta(days=d)).isoformat()}-{h:02d}:{m:02d}"
        for d in (-1, 0, 1)
        for h in range(24)
        for m in (0, 30)
    ]
    check_space(space_keys, keys + walls + [k[:16] for k in keys])


def test_static_and_dynamic_lists() -> None:
    static = StaticPartitions(["x", "y", "z"]).key_space(NOW)
    assert static.indexes_of(["z", "q", "x"]) == [2, None, 0]
    dynamic = DynamicPartitions("d").key_space(NOW, ["a", "b"])
    assert dynamic.indexes_of(["b", "a", "c"]) == [1, 0, None]


def resolve(definition: PartitionsDefinition, keys: list[str]) -> tuple[int, tuple[str, ...]]:
    space = definition.key_space(NOW)
    resolved = resolve_selection(Selection(SelectionKind.KEYS, keys=tuple(keys)), definition, space)
    assert resolved.keys is not None and resolved.total == len(keys)
    return resolved.first_index, resolved.keys


def test_resolve_sorts_keys_into_partition_order() -> None:
    daily = DailyPartitions(start="2024-01-01")
    assert resolve(daily, ["2024-01-05", "2024-01-02", "2024-01-09"]) == (
        4 - 3,
        ("2024-01-02", "2024-01-05", "2024-01-09"),
    )
    hourly = HourlyPartitions(start="2024-01-01-00:00")
    assert resolve(hourly, ["2024-01-01-03:00", "2024-01-01-01:00"]) == (
        1,
        ("2024-01-01-01:00", "2024-01-01-03:00"),
    )


@pytest.mark.parametrize(
    ("keys", "code", "message"),
    [
        ([], "EMPTY_SELECTION", "the key list is empty"),
        (
            ["2024-01-02", "2024-01-03", "2024-01-02"],
            "INVALID_ARGUMENT",
            "'2024-01-02' is listed twice",
        ),
        (
            ["2024-01-02", "2024-13-01", "1999-01-01"],
            "INVALID_PARTITION_RANGE",
            "1 malformed key(s)",
        ),
        (["2024-01-02", "1999-01-01"], "PARTITION_NOT_FOUND", "1 key(s) are not partitions"),
        # A key listed twice is said first, even when another key is outside.
        (["1999-01-01", "2024-01-02", "2024-01-02"], "INVALID_ARGUMENT", "listed twice"),
    ],
)
def test_resolve_errors(keys: list[str], code: str, message: str) -> None:
    daily = DailyPartitions(start="2024-01-01")
    with pytest.raises(SelectionProblem) as raised:
        resolve_selection(
            Selection(SelectionKind.KEYS, keys=tuple(keys)), daily, daily.key_space(NOW)
        )
    assert raised.value.code == code and message in raised.value.message
