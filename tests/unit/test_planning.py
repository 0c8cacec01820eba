"""Pure partition arithmetic of backfills: selections, positions, folding."""

from __future__ import annotations

import itertools
from datetime import UTC, datetime

import pytest
from hypothesis import given
from hypothesis import strategies as st

from backfiller import DailyPartitions, StaticPartitions
from backfiller.domain import Order, Reprocess, RunState, SelectionKind, SkipReason, skip_reason_for
from backfiller.planning import (
    Selection,
    SelectionProblem,
    fold_statuses,
    key_at,
    keys_between,
    pin_stored_selection,
    position_of,
    request_fingerprint,
    resolve_selection,
)

NOW = datetime(2024, 3, 1, tzinfo=UTC)
DAILY = DailyPartitions(start="2024-01-01")
SPACE = DAILY.key_space(NOW)
ALL_KEYS = SPACE.keys(0, len(SPACE))


def test_a_range_is_pinned_by_index_without_expansion() -> None:
    resolved = resolve_selection(
        Selection(SelectionKind.RANGE, "2024-01-10", "2024-02-09"), DAILY, SPACE
    )
    assert (resolved.first_index, resolved.total) == (9, 31)
    assert resolved.keys is None


@pytest.mark.parametrize(
    ("selection", "code"),
    [
        (Selection(SelectionKind.RANGE, "2024-02-01", "2024-01-01"), "INVALID_PARTITION_RANGE"),
        (Selection(SelectionKind.RANGE, "2024-1-1", "2024-01-02"), "INVALID_PARTITION_RANGE"),
        (Selection(SelectionKind.RANGE, "2023-12-31", "2024-01-02"), "PARTITION_NOT_FOUND"),
        (Selection(SelectionKind.RANGE, "2024-01-01", "2024-03-01"), "PARTITION_NOT_FOUND"),
        (Selection(SelectionKind.KEYS, keys=()), "EMPTY_SELECTION"),
        (Selection(SelectionKind.KEYS, keys=("2024-01-01", "2024-01-01")), "INVALID_ARGUMENT"),
        (Selection(SelectionKind.KEYS, keys=("nonsense",)), "INVALID_PARTITION_RANGE"),
        (Selection(SelectionKind.KEYS, keys=("2025-01-01",)), "PARTITION_NOT_FOUND"),
    ],
)
def test_bad_selections_name_their_problem(selection: Selection, code: str) -> None:
    with pytest.raises(SelectionProblem) as problem:
        resolve_selection(selection, DAILY, SPACE)
    assert problem.value.code == code
    assert problem.value.field[0] == "partitions"


def test_all_on_an_empty_space_is_an_empty_selection() -> None:
    empty = StaticPartitions([])
    with pytest.raises(SelectionProblem) as problem:
        resolve_selection(Selection(SelectionKind.ALL), empty, empty.key_space(NOW))
    assert problem.value.code == "EMPTY_SELECTION"


selections = st.one_of(
    st.tuples(st.integers(0, len(ALL_KEYS) - 1), st.integers(0, len(ALL_KEYS) - 1)).map(
        lambda ij: Selection(SelectionKind.RANGE, ALL_KEYS[min(ij)], ALL_KEYS[max(ij)])
    ),
    st.lists(st.sampled_from(ALL_KEYS), min_size=1, max_size=20, unique=True).map(
        lambda keys: Selection(SelectionKind.KEYS, keys=tuple(keys))
    ),
    st.just(Selection(SelectionKind.ALL)),
)


def expanded(selection: Selection) -> list[str]:
    """The naive expansion, for comparison only."""
    if selection.kind is SelectionKind.ALL:
        return list(ALL_KEYS)
    if selection.kind is SelectionKind.KEYS:
        assert selection.keys is not None
        return sorted(selection.keys)
    lo, hi = ALL_KEYS.index(selection.range_start or ""), ALL_KEYS.index(selection.range_end or "")
    return list(ALL_KEYS[lo : hi + 1])


@given(selections, st.sampled_from(Order), st.data())
def test_positions_match_the_naive_expansion(
    selection: Selection, order: Order, data: st.DataObject
) -> None:
    resolved = resolve_selection(selection, DAILY, SPACE)
    naive = expanded(selection)
    if order is Order.NEWEST_FIRST:
        naive.reverse()
    assert resolved.total == len(naive)
    assert [key_at(resolved, order, SPACE, p) for p in range(resolved.total)] == naive
    start = data.draw(st.integers(-3, resolved.total + 3))
    stop = data.draw(st.integers(-3, resolved.total + 3))
    assert keys_between(resolved, order, SPACE, start, stop) == naive[max(0, start) : max(0, stop)]
    for position, key in enumerate(naive):
        assert position_of(resolved, order, SPACE, key) == position
    outside = [k for k in ALL_KEYS if k not in naive][:3]
    assert all(position_of(resolved, order, SPACE, k) is None for k in outside)
    assert pin_stored_selection(selection, resolved.total, DAILY, SPACE) == resolved


def test_all_keeps_its_launch_size_as_time_passes() -> None:
    later = DAILY.key_space(datetime(2024, 4, 1, tzinfo=UTC))
    resolved = pin_stored_selection(Selection(SelectionKind.ALL), len(SPACE), DAILY, later)
    assert resolved.total == len(SPACE)


def test_vanished_partitions_are_a_problem() -> None:
    narrower = DailyPartitions(start="2024-01-15")
    with pytest.raises(SelectionProblem):
        pin_stored_selection(
            Selection(SelectionKind.RANGE, "2024-01-01", "2024-01-31"),
            31,
            narrower,
            narrower.key_space(NOW),
        )


statuses = st.sampled_from(["pending", "queued", "running", "succeeded", "failed"])


@given(st.integers(0, 60), st.dictionaries(st.integers(0, 70), statuses), statuses)
def test_folding_covers_every_position_once(
    total: int, known: dict[int, str], default: str
) -> None:
    ranges = fold_statuses(sorted(known.items()), total, default)
    flat: list[str] = []
    for r in ranges:
        assert r.count > 0
        assert r.start == len(flat)
        flat += [r.status] * r.count
    assert flat == [known.get(p, default) for p in range(total)]
    for a, b in itertools.pairwise(ranges):
        assert a.status != b.status


@pytest.mark.parametrize(
    ("reprocess", "latest", "skip"),
    [
        (Reprocess.MISSING, None, None),
        (Reprocess.MISSING, RunState.SUCCESS, SkipReason.ALREADY_SUCCEEDED),
        (Reprocess.MISSING, RunState.FAILED, SkipReason.ALREADY_FAILED),
        (Reprocess.MISSING, RunState.CANCELED, None),
        (Reprocess.FAILED_AND_MISSING, RunState.SUCCESS, SkipReason.ALREADY_SUCCEEDED),
        (Reprocess.FAILED_AND_MISSING, RunState.FAILED, None),
        (Reprocess.ALL, RunState.SUCCESS, None),
        (Reprocess.ALL, RunState.FAILED, None),
    ],
)
def test_reprocess_rules(
    reprocess: Reprocess, latest: RunState | None, skip: SkipReason | None
) -> None:
    assert skip_reason_for(reprocess, latest) is skip


def test_request_fingerprint_is_order_insensitive_for_mappings() -> None:
    assert request_fingerprint({"a": 1, "b": [1, 2]}) == request_fingerprint({"b": [1, 2], "a": 1})
    assert request_fingerprint({"a": 1}) != request_fingerprint({"a": 2})
