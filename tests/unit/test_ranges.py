"""Ranged runs, pure: chunks of consecutive partitions, a range's window, the preview's count."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from itertools import pairwise
from zoneinfo import ZoneInfo

import pytest
from hypothesis import given
from hypothesis import strategies as st

from backfiller.definitions.partitions import DailyPartitions, MonthlyPartitions, StaticPartitions
from backfiller.definitions.policies import BackfillPolicy, multi_run, single_run
from backfiller.domain import Order, SelectionKind
from backfiller.domain.ranges import (
    SINGLE_RUN_MAX_PARTITIONS,
    chunk_consecutive,
    range_window,
    runs_needed,
)
from backfiller.planning import Selection, keys_between, ranged_run_count, resolve_selection

NOW = datetime(2026, 6, 15, tzinfo=UTC)


def test_ten_consecutive_partitions_in_fours_make_four_four_two() -> None:
    assert chunk_consecutive(list(range(10)), 4) == [[0, 1, 2, 3], [4, 5, 6, 7], [8, 9]]


def test_newest_first_chunks_run_downward() -> None:
    assert chunk_consecutive([9, 8, 7, 6, 5], 3) == [[0, 1, 2], [3, 4]]


def test_a_gap_or_an_unknown_key_splits_a_chunk() -> None:
    assert chunk_consecutive([0, 1, 3, 4, None, 5, 6], 10) == [[0, 1], [2, 3], [4], [5, 6]]


def test_a_chunk_never_changes_direction() -> None:
    assert chunk_consecutive([1, 2, 1, 0], 10) == [[0, 1], [2, 3]]


def test_a_chunk_size_below_one_is_refused() -> None:
    with pytest.raises(ValueError, match="at least 1"):
        chunk_consecutive([0], 0)


@given(
    st.lists(st.integers(min_value=0, max_value=60), unique=True, max_size=40),
    st.integers(min_value=1, max_value=8),
)
def test_chunks_cover_every_candidate_once_in_order_and_hold_consecutive_keys(
    indexes: list[int], per_run: int
) -> None:
    ordered = sorted(indexes)
    groups = chunk_consecutive(ordered, per_run)
    assert [p for g in groups for p in g] == list(range(len(ordered)))
    for group in groups:
        keys = [ordered[p] for p in group]
        assert 1 <= len(group) <= per_run
        assert keys == list(range(keys[0], keys[0] + len(keys)))
    # Greedy: two neighbouring chunks could not have been one.
    for left, right in pairwise(groups):
        joined = ordered[right[0]] == ordered[left[-1]] + 1
        assert not joined or len(left) == per_run


@given(st.integers(min_value=0, max_value=10_000), st.integers(min_value=1, max_value=1_000))
def test_runs_needed_is_the_ceiling(partitions: int, per_run: int) -> None:
    assert runs_needed(partitions, per_run) == len(chunk_consecutive(range(partitions), per_run))


def window_of(partitions: DailyPartitions | MonthlyPartitions, start: str, end: str) -> object:
    space = partitions.key_space(NOW)
    resolved = resolve_selection(Selection(SelectionKind.RANGE, start, end), partitions, space)
    keys = keys_between(resolved, Order.OLDEST_FIRST, space, 0, resolved.total)
    return range_window([space.window(k) for k in keys])


def test_a_daily_range_across_the_spring_dst_change_spans_local_midnights() -> None:
    paris = ZoneInfo("Europe/Paris")
    days = DailyPartitions(start="2024-03-01", timezone="Europe/Paris")
    window = window_of(days, "2024-03-30", "2024-04-01")
    assert window == (datetime(2024, 3, 30, tzinfo=paris), datetime(2024, 4, 2, tzinfo=paris))
    assert isinstance(window, tuple)
    assert window[1] - window[0] == timedelta(days=3, hours=-1)  # the 23-hour day


def test_a_daily_range_across_the_autumn_dst_change_has_the_25_hour_day() -> None:
    days = DailyPartitions(start="2024-10-01", timezone="America/New_York")
    window = window_of(days, "2024-11-02", "2024-11-04")
    assert isinstance(window, tuple)
    assert window[1] - window[0] == timedelta(days=3, hours=1)


def test_a_monthly_range_ends_at_the_month_after_its_last_key() -> None:
    months = MonthlyPartitions(start="2023-11-01")
    window = window_of(months, "2024-01-01", "2024-02-01")
    assert window == (datetime(2024, 1, 1, tzinfo=UTC), datetime(2024, 3, 1, tzinfo=UTC))


def test_a_range_of_untimed_partitions_has_no_window() -> None:
    assert range_window([None, None]) is None
    assert range_window([]) is None


DAYS = DailyPartitions(start="2024-01-01")


def count(start: str, end: str, skipped: set[int], per_run: int, order: Order) -> int:
    space = DAYS.key_space(NOW)
    resolved = resolve_selection(Selection(SelectionKind.RANGE, start, end), DAYS, space)
    return ranged_run_count(resolved, order, space, skipped, per_run)


def test_the_preview_counts_chunks_split_by_skipped_partitions() -> None:
    assert count("2024-01-01", "2024-01-10", set(), 4, Order.OLDEST_FIRST) == 3
    assert count("2024-01-01", "2024-01-10", {2}, 4, Order.OLDEST_FIRST) == 3  # 2 | 4, 3
    assert count("2024-01-01", "2024-01-10", {4}, 4, Order.OLDEST_FIRST) == 3  # 4 | 4, 1
    assert count("2024-01-01", "2024-01-10", {4}, 5, Order.OLDEST_FIRST) == 2  # 4 | 5
    assert count("2024-01-01", "2024-01-10", {0, 9}, 10, Order.NEWEST_FIRST) == 1


def test_the_preview_of_a_100000_partition_range_walks_only_its_skipped_positions() -> None:
    big = DailyPartitions(start="1800-01-01")
    space = big.key_space(NOW)
    resolved = resolve_selection(Selection(SelectionKind.ALL), big, space)
    assert resolved.total > 80_000
    runs = ranged_run_count(resolved, Order.OLDEST_FIRST, space, {5}, SINGLE_RUN_MAX_PARTITIONS)
    assert runs == 1 + runs_needed(resolved.total - 6, SINGLE_RUN_MAX_PARTITIONS)


def test_a_key_list_is_chunked_by_the_keys_places_in_the_space() -> None:
    letters = StaticPartitions(["a", "b", "c", "d", "e"])
    space = letters.key_space(NOW)
    picked = Selection(SelectionKind.KEYS, keys=("a", "b", "d", "e"))
    resolved = resolve_selection(picked, letters, space)
    assert ranged_run_count(resolved, Order.OLDEST_FIRST, space, set(), 10) == 2
    assert ranged_run_count(resolved, Order.NEWEST_FIRST, space, {0}, 10) == 2  # e left out


def test_policies() -> None:
    assert single_run().partitions_per_run == SINGLE_RUN_MAX_PARTITIONS
    assert multi_run(max_partitions_per_run=4).partitions_per_run == 4
    with pytest.raises(ValueError, match="between 1 and"):
        BackfillPolicy(0)


def test_a_ranged_task_crosses_the_celery_broker_with_its_keys() -> None:
    from backfiller.launchers.base import RunTask
    from backfiller.launchers.celery.protocol import task_from_message, task_message

    keys = ("2024-01-01", "2024-01-02", "2024-01-03")
    task = RunTask(
        run_id=7,
        backfill_id=1,
        job_name="fours",
        partition_key=keys[0],
        attempt=1,
        run_config={},
        tags={},
        partition_start=datetime(2024, 1, 1, tzinfo=UTC),
        partition_end=datetime(2024, 1, 4, tzinfo=UTC),
        partition_keys=keys,
    )
    assert task_from_message(task_message(task, "daemon")) == task
    single = RunTask(7, 1, "plain", "2024-01-01", 1, {}, {})
    assert task_from_message(task_message(single, "daemon")).partition_keys == ()


def test_a_run_context_of_one_partition_lists_it_as_its_keys() -> None:
    import logging

    from backfiller.definitions.jobs import RunContext

    context = RunContext(
        job_name="plain",
        partition_key="2024-01-01",
        partition_start=None,
        partition_end=None,
        run_id="run_1",
        attempt=1,
        run_config={},
        tags={},
        backfill_id="bf_1",
        log=logging.getLogger("test"),
    )
    assert context.partition_keys == ("2024-01-01",)
