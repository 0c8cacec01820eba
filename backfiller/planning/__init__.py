"""Pure partition arithmetic of a backfill: selection -> positions -> keys. No IO.

A backfill's selection is stored as asked. Its partitions are numbered by *position*, 0 to
``total - 1``, in launch order; ``key_at`` turns a position into a partition key without ever
expanding the whole selection, so launching a million partitions costs what one costs.
"""

from __future__ import annotations

import hashlib
import json
import operator
from collections.abc import Collection, Iterable, Sequence
from dataclasses import dataclass
from itertools import islice
from typing import Any, cast

from backfiller.definitions.partitions import KeySpace, PartitionsDefinition
from backfiller.domain import Order, SelectionKind
from backfiller.domain.ranges import chunk_consecutive, runs_needed

MAX_KEYS_LISTED = 5


@dataclass(frozen=True, slots=True)
class Selection:
    """A partition selection as a client asked for it."""

    kind: SelectionKind
    range_start: str | None = None
    range_end: str | None = None
    keys: tuple[str, ...] | None = None


@dataclass(frozen=True, slots=True)
class ResolvedSelection:
    """A selection pinned to a key space: where it starts and how many partitions it has.

    For a key list, ``keys`` holds the keys in partition order (oldest first).
    """

    kind: SelectionKind
    first_index: int
    total: int
    keys: tuple[str, ...] | None = None


class SelectionProblem(Exception):
    """Why a selection cannot be resolved; ``code`` names a public error code."""

    def __init__(self, code: str, message: str, field: Sequence[str]) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.field = list(field)


def resolve_selection(
    selection: Selection, partitions: PartitionsDefinition, space: KeySpace
) -> ResolvedSelection:
    """Check a selection against a key space and pin it.

    Raises:
        SelectionProblem: code ``INVALID_PARTITION_RANGE``, ``PARTITION_NOT_FOUND`` or
            ``EMPTY_SELECTION``.
    """
    if selection.kind is SelectionKind.ALL:
        return _resolve_all(space)
    if selection.kind is SelectionKind.RANGE:
        return _resolve_range(selection, partitions, space)
    return _resolve_keys(selection, partitions, space)


def _resolve_all(space: KeySpace) -> ResolvedSelection:
    if len(space) == 0:
        raise SelectionProblem(
            "EMPTY_SELECTION", "the job has no partitions yet", ["partitions", "all"]
        )
    return ResolvedSelection(SelectionKind.ALL, 0, len(space))


def _resolve_range(
    selection: Selection, partitions: PartitionsDefinition, space: KeySpace
) -> ResolvedSelection:
    assert selection.range_start is not None and selection.range_end is not None
    start = _range_bound_index(partitions, space, "start", selection.range_start)
    end = _range_bound_index(partitions, space, "end", selection.range_end)
    if end < start:
        raise SelectionProblem(
            "INVALID_PARTITION_RANGE",
            f"the range ends ({selection.range_end!r}) before it starts "
            f"({selection.range_start!r})",
            ["partitions", "range"],
        )
    return ResolvedSelection(SelectionKind.RANGE, start, end - start + 1)


def _range_bound_index(
    partitions: PartitionsDefinition, space: KeySpace, bound: str, key: str
) -> int:
    """The index of a range's ``start`` or ``end`` key in the space."""
    index = space.index_of(key)
    if index is not None:
        return index
    field = ["partitions", "range", bound]
    # Only a key outside the space is parsed twice, to say why.
    problem = partitions.validate_key(key)
    if problem is not None:
        raise SelectionProblem("INVALID_PARTITION_RANGE", problem, field)
    raise SelectionProblem("PARTITION_NOT_FOUND", f"{key!r} is not a partition of the job", field)


def _resolve_keys(
    selection: Selection, partitions: PartitionsDefinition, space: KeySpace
) -> ResolvedSelection:
    keys = selection.keys
    assert keys is not None
    if not keys:
        raise SelectionProblem("EMPTY_SELECTION", "the key list is empty", ["partitions", "keys"])
    # One pass over the keys in the key space (a list of thousands is read as a whole). A key
    # names one partition and a partition has one key, so keys repeat where indexes do.
    indexes = space.indexes_of(keys)
    if None in indexes:
        if len(set(keys)) != len(keys):
            _refuse_repeated_key(keys)
        _refuse_keys_outside(
            partitions, [k for k, i in zip(keys, indexes, strict=True) if i is None]
        )
    located = cast(list[int], indexes)  # no None left
    if not all(map(operator.lt, located, islice(located, 1, None))):  # not in strict order
        if len(set(located)) != len(located):
            _refuse_repeated_key(keys)
        pairs = sorted(zip(located, keys, strict=True))
        located, keys = [i for i, _ in pairs], tuple(k for _, k in pairs)
    return ResolvedSelection(SelectionKind.KEYS, located[0], len(located), tuple(keys))


def _refuse_repeated_key(keys: Sequence[str]) -> None:
    seen: set[str] = set()
    for key in keys:
        if key in seen:
            raise SelectionProblem(
                "INVALID_ARGUMENT", f"{key!r} is listed twice", ["partitions", "keys"]
            )
        seen.add(key)
    raise AssertionError("two keys of one partition")  # a key space gives each its own key


def _refuse_keys_outside(partitions: PartitionsDefinition, outside: Sequence[str]) -> None:
    """Raise for keys not in the space: the malformed ones first, else the missing ones."""
    malformed = [k for k in outside if partitions.validate_key(k) is not None]
    if malformed:
        raise SelectionProblem(
            "INVALID_PARTITION_RANGE",
            f"{len(malformed)} malformed key(s): {_listed(malformed)}",
            ["partitions", "keys"],
        )
    raise SelectionProblem(
        "PARTITION_NOT_FOUND",
        f"{len(outside)} key(s) are not partitions of the job: {_listed(outside)}",
        ["partitions", "keys"],
    )


def _listed(keys: Sequence[str]) -> str:
    shown = ", ".join(repr(k) for k in keys[:MAX_KEYS_LISTED])
    return shown + (", ..." if len(keys) > MAX_KEYS_LISTED else "")


def key_at(resolved: ResolvedSelection, order: Order, space: KeySpace, position: int) -> str:
    """The partition key launched at ``position`` (0-based, in launch order)."""
    if not 0 <= position < resolved.total:
        raise IndexError(position)
    offset = position if order is Order.OLDEST_FIRST else resolved.total - 1 - position
    if resolved.keys is not None:
        return resolved.keys[offset]
    return space.key_at(resolved.first_index + offset)


def keys_between(
    resolved: ResolvedSelection, order: Order, space: KeySpace, start: int, stop: int
) -> list[str]:
    """Keys of positions ``[start, stop)`` in launch order, clamped to the selection."""
    start = max(0, start)
    stop = min(resolved.total, stop)
    if stop <= start:
        return []
    if order is Order.OLDEST_FIRST:
        lo, hi = start, stop
    else:
        lo, hi = resolved.total - stop, resolved.total - start
    if resolved.keys is not None:
        chunk = list(resolved.keys[lo:hi])
    else:
        chunk = space.keys(resolved.first_index + lo, resolved.first_index + hi)
    if order is Order.NEWEST_FIRST:
        chunk.reverse()
    return chunk


def position_of(resolved: ResolvedSelection, order: Order, space: KeySpace, key: str) -> int | None:
    """The launch position of ``key`` in the selection, or None when it is not in it."""
    if resolved.keys is not None:
        try:
            offset = resolved.keys.index(key)
        except ValueError:
            return None
    else:
        index = space.index_of(key)
        if index is None:
            return None
        offset = index - resolved.first_index
        if not 0 <= offset < resolved.total:
            return None
    return offset if order is Order.OLDEST_FIRST else resolved.total - 1 - offset


@dataclass(frozen=True, slots=True)
class FoldedRange:
    status: str
    start: int
    count: int


def fold_statuses(
    known: Iterable[tuple[int, str]], total: int, unknown_status: str
) -> list[FoldedRange]:
    """Fold (position, status) pairs, sorted by position, into ranges of one status.

    Positions in ``[0, total)`` missing from ``known`` take ``unknown_status``.
    """
    ranges: list[FoldedRange] = []
    cursor = 0
    current: str | None = None
    start = 0

    def push(status: str, at: int, count: int) -> None:
        nonlocal current, start
        if count <= 0:
            return
        if current == status and ranges and ranges[-1].start + ranges[-1].count == at:
            last = ranges.pop()
            ranges.append(FoldedRange(status, last.start, last.count + count))
        else:
            ranges.append(FoldedRange(status, at, count))
        current = status
        start = at

    for position, status in known:
        if position >= total:
            break
        if position > cursor:
            push(unknown_status, cursor, position - cursor)
        push(status, position, 1)
        cursor = position + 1
    if cursor < total:
        push(unknown_status, cursor, total - cursor)
    return ranges


def request_fingerprint(payload: dict[str, Any]) -> str:
    """A stable hash of a normalized request, to compare two uses of an idempotency key."""
    text = json.dumps(payload, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(text.encode()).hexdigest()


def pin_stored_selection(
    selection: Selection, total: int, partitions: PartitionsDefinition, space: KeySpace
) -> ResolvedSelection:
    """Pin a stored selection again, later than its launch.

    ``all`` keeps the size it had at launch (an open-ended definition grows meanwhile). A
    selection whose partitions vanished from the definition raises :class:`SelectionProblem`,
    which makes the backfill FAILED.
    """
    if selection.kind is SelectionKind.ALL:
        if len(space) < total:
            raise SelectionProblem(
                "PARTITION_NOT_FOUND",
                f"the job now has {len(space)} partitions, fewer than the {total} launched",
                ["partitions", "all"],
            )
        return ResolvedSelection(SelectionKind.ALL, 0, total)
    resolved = resolve_selection(selection, partitions, space)
    if resolved.total != total:
        raise SelectionProblem(
            "PARTITION_NOT_FOUND",
            f"the selection now has {resolved.total} partitions, not the {total} launched",
            ["partitions"],
        )
    return resolved


def ranged_run_count(
    resolved: ResolvedSelection,
    order: Order,
    space: KeySpace,
    skipped: Collection[int],
    per_run: int,
) -> int:
    """How many ranged runs of at most ``per_run`` consecutive partitions the selection's
    partitions form once the positions ``skipped`` are left out (a skipped one splits a chunk).

    A range's positions are consecutive partitions, so only the skipped positions are walked;
    a key list is chunked by the keys' indexes in the key space.
    """
    if resolved.keys is None:
        count, previous = 0, -1
        for position in [*sorted(skipped), resolved.total]:
            count += runs_needed(position - previous - 1, per_run)
            previous = position
        return count
    last = resolved.total - 1
    left_out = {p if order is Order.OLDEST_FIRST else last - p for p in skipped}
    indexes = [space.index_of(k) for i, k in enumerate(resolved.keys) if i not in left_out]
    return len(chunk_consecutive(indexes, per_run))
