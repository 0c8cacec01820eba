"""The launch order of an asset backfill's slots (``backfiller.planning.asset_plan``), pure."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from backfiller.domain import Order
from backfiller.planning.asset_plan import AssetPart, AssetTarget


def target_of(counts: list[int]) -> AssetTarget:
    parts = tuple(AssetPart(f"a{i}", "f", 0, n) for i, n in enumerate(counts))
    return AssetTarget(("a0",), False, True, parts)


@given(st.lists(st.integers(1, 80), min_size=1, max_size=5), st.sampled_from(Order))
def test_the_walk_visits_every_slot_once_by_position(counts: list[int], order: Order) -> None:
    target = target_of(counts)
    walked = list(target.in_launch_order(order))
    positions = [target.position_of(i, k, order) for i, k in walked]
    assert sorted(walked) == [(i, k) for i, n in enumerate(counts) for k in range(n)]
    assert positions == sorted(positions) and len(set(positions)) == len(positions)


def test_a_month_comes_after_its_days_and_newest_first_reverses_each_asset() -> None:
    days_then_month = target_of([3, 1])
    assert list(days_then_month.in_launch_order(Order.OLDEST_FIRST)) == [
        (0, 0),
        (0, 1),
        (0, 2),
        (1, 0),
    ]
    chain = target_of([2, 2])
    assert list(chain.in_launch_order(Order.NEWEST_FIRST)) == [(0, 1), (1, 1), (0, 0), (1, 0)]
