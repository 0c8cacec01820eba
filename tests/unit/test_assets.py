"""Asset definitions and partition mappings: the graph checks at load, and the mappings'
arithmetic (time windows across DST and month ends, offsets, static maps) as properties."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, date, datetime, timedelta

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from backfiller import (
    AllPartitions,
    AssetSelection,
    BackfillRequest,
    DailyPartitions,
    Definitions,
    DefinitionsError,
    Dep,
    HourlyPartitions,
    MonthlyPartitions,
    OffsetMapping,
    PartitionRange,
    StaticMapping,
    StaticPartitions,
    asset,
    job,
)
from backfiller.definitions.assets import AssetDefinition, DepLike
from backfiller.definitions.mappings import (
    EVERY,
    IdentityMapping,
    TimeWindowMapping,
)
from backfiller.definitions.partitions import PartitionsDefinition

NOW = datetime(2030, 1, 1, tzinfo=UTC)
ZONES = ["UTC", "America/New_York", "Europe/London", "Australia/Lord_Howe", "America/Santiago"]


def _noop(context: object) -> None:
    return None


def _asset(
    name: str, partitions: PartitionsDefinition | None = None, deps: Sequence[DepLike] = ()
) -> AssetDefinition:
    return asset(name=name, partitions=partitions, deps=deps)(_noop)


DAILY = DailyPartitions(start="2024-01-01", end="2025-01-01")


def test_a_diamond_loads_in_topological_order_with_levels() -> None:
    defs = Definitions(
        assets=[
            _asset("d", DAILY, ["b", "c"]),
            _asset("b", DAILY, ["a"]),
            _asset("c", DAILY, ["a"]),
            _asset("a", DAILY),
        ]
    )
    graph = defs.asset_graph
    assert graph.order.index("a") < graph.order.index("b") < graph.order.index("d")
    assert graph.levels(graph.order) == {"a": 0, "b": 1, "c": 1, "d": 2}
    assert graph.select(["b"], upstream=True, downstream=False) == ["a", "b"]
    assert graph.select(["b"], upstream=False, downstream=True) == ["b", "d"]
    assert defs.get_runnable("d") is not None and defs.get_job("d") is None


def test_a_cycle_is_refused_naming_its_assets() -> None:
    with pytest.raises(DefinitionsError, match=r"cycle through 'x', 'z', 'y', 'x'"):
        Definitions(
            assets=[_asset("x", DAILY, ["z"]), _asset("y", DAILY, ["x"]), _asset("z", DAILY, ["y"])]
        )


def test_an_unknown_dependency_is_refused() -> None:
    with pytest.raises(DefinitionsError, match=r"'b' depends on 'nope', which is not an asset"):
        Definitions(assets=[_asset("b", DAILY, ["nope"])])


def test_incompatible_partitions_are_refused_naming_both_assets() -> None:
    static = StaticPartitions(["x", "y"])
    with pytest.raises(DefinitionsError, match=r"'b' depends on 'a' but their partitions"):
        Definitions(assets=[_asset("a", DAILY), _asset("b", static, ["a"])])
    with pytest.raises(DefinitionsError, match=r"'b' depends on 'a' with OffsetMapping\(-1\)"):
        Definitions(
            assets=[
                _asset("a", DAILY),
                _asset("b", MonthlyPartitions(start="2024-01-01"), [Dep("a", OffsetMapping(-1))]),
            ]
        )


def test_a_job_and_an_asset_cannot_share_a_name() -> None:
    clash = job(name="a", partitions=DAILY)(_noop)
    with pytest.raises(DefinitionsError, match="both a job and an asset"):
        Definitions(jobs=[clash], assets=[_asset("a", DAILY)])


def test_unpartitioned_assets_depend_on_every_partition() -> None:
    defs = Definitions(assets=[_asset("a", DAILY), _asset("summary", None, ["a"])])
    (edge,) = defs.asset_graph.upstream_edges["summary"]
    up = DAILY.key_space(NOW)
    down = defs.asset_graph.assets["summary"].key_partitions.key_space(NOW)
    assert edge.mapping.upstream_keys("default", up, down) is EVERY


@settings(max_examples=60, deadline=None)
@given(
    zone=st.sampled_from(ZONES),
    day=st.dates(min_value=date(2020, 1, 1), max_value=date(2026, 12, 31)),
)
def test_daily_to_monthly_maps_each_day_to_the_month_containing_it(zone: str, day: date) -> None:
    daily = DailyPartitions(start="2020-01-01", end="2027-01-01", timezone=zone)
    monthly = MonthlyPartitions(start="2020-01-01", end="2027-01-01", timezone=zone)
    up, down = daily.key_space(NOW), monthly.key_space(NOW)
    mapping = TimeWindowMapping()
    key = day.isoformat()
    month = day.replace(day=1).isoformat()
    assert mapping.downstream_keys(key, up, down) == [month]
    days = mapping.upstream_keys(month, up, down)
    assert isinstance(days, list) and key in days
    first = day.replace(day=1)
    following = (first + timedelta(days=32)).replace(day=1)
    assert days == [
        (first + timedelta(days=i)).isoformat() for i in range((following - first).days)
    ]


@settings(max_examples=40, deadline=None)
@given(zone=st.sampled_from(ZONES), day=st.dates(date(2021, 1, 1), date(2023, 12, 30)))
def test_hourly_to_daily_covers_every_hour_of_the_local_day_across_dst(
    zone: str, day: date
) -> None:
    hourly = HourlyPartitions(start="2021-01-01-00:00", end="2024-01-01-00:00", timezone=zone)
    daily = DailyPartitions(start="2021-01-01", end="2024-01-01", timezone=zone)
    up, down = hourly.key_space(NOW), daily.key_space(NOW)
    hours = TimeWindowMapping().upstream_keys(day.isoformat(), up, down)
    assert isinstance(hours, list) and hours
    window = down.window(day.isoformat())
    assert window is not None
    covered = [up.window(h) for h in hours]
    assert covered[0] is not None and covered[-1] is not None
    assert covered[0][0] <= window[0] and covered[-1][1] >= window[1]
    # every hour overlaps the day, and each maps back to it
    for h in hours:
        assert day.isoformat() in TimeWindowMapping().downstream_keys(h, up, down)  # type: ignore[operator]


@settings(max_examples=60, deadline=None)
@given(offset=st.integers(-40, 40), index=st.integers(0, 365))
def test_offsets_shift_within_the_space_and_invert(offset: int, index: int) -> None:
    space = DAILY.key_space(NOW)
    mapping = OffsetMapping(offset)
    key = space.key_at(index)
    ups = mapping.upstream_keys(key, space, space)
    if 0 <= index + offset < len(space):
        assert ups == [space.key_at(index + offset)]
        assert key in mapping.downstream_keys(ups[0], space, space)  # type: ignore[operator]
    else:
        assert ups == []


def test_identity_and_static_maps() -> None:
    space = DAILY.key_space(NOW)
    assert IdentityMapping().upstream_keys("2024-02-29", space, space) == ["2024-02-29"]
    regions = StaticPartitions(["eu", "us"]).key_space(NOW)
    countries = StaticPartitions(["fr", "de", "us"]).key_space(NOW)
    mapping = StaticMapping({"fr": "eu", "de": "eu", "us": ["us"]})
    assert mapping.upstream_keys("eu", countries, regions) == ["fr", "de"]
    assert mapping.downstream_keys("de", countries, regions) == ["eu"]


def test_a_python_request_can_target_assets() -> None:
    request = BackfillRequest(
        assets=AssetSelection(["daily_visits"], downstream=True),
        partitions=PartitionRange("2024-03-01", "2024-03-31"),
    )
    assert request.as_graphql_input()["target"] == {
        "assets": {"names": ["daily_visits"], "upstream": False, "downstream": True}
    }
    assert BackfillRequest("daily_sales", AllPartitions()).as_graphql_input()["target"] == {
        "job": "daily_sales"
    }
    with pytest.raises(TypeError, match="either a job or an AssetSelection"):
        BackfillRequest(job="x", partitions=AllPartitions(), assets=AssetSelection(["a"]))
    with pytest.raises(TypeError, match="needs partitions"):
        BackfillRequest(job="x")
    with pytest.raises(TypeError, match="not a str"):
        AssetSelection("abc")
