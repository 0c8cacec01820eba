"""Partition mappings: which partitions of an upstream asset a downstream partition depends on.

Pure: a mapping works on two key spaces (the upstream's and the downstream's, each an ordered,
finite snapshot of keys) and never expands either. Each answer is a contiguous run of keys or a
short list, except :class:`AllPartitionsMapping`, which answers :data:`EVERY` ("every partition
of the other asset in the backfill") instead of listing them.

Mappings:

* :class:`IdentityMapping` (the default between two assets of one partitions definition): the
  same key.
* :class:`TimeWindowMapping` (the default between two time-partitioned assets of different
  cadences): the upstream partitions whose windows overlap the downstream's window, e.g. a
  monthly asset depends on every day of its month.
* :class:`OffsetMapping` (``offset=-1``: "yesterday's partition"): the key ``offset`` positions
  away in the upstream's space, which must have the downstream's partitions definition.
* :class:`AllPartitionsMapping` (the default when either asset is unpartitioned): every partition.
* :class:`StaticMapping`: an explicit map from upstream keys to downstream keys.
"""

from __future__ import annotations

import abc
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Final

from backfiller.definitions.partitions import KeySpace, PartitionsDefinition, PartitionsKind


class _Every:
    def __repr__(self) -> str:
        return "EVERY"


EVERY: Final = _Every()
"""Every partition of the other asset (within the backfill)."""

Keys = list[str] | _Every


class PartitionMapping(abc.ABC):
    """How a downstream asset's partitions depend on an upstream asset's partitions."""

    def problem(
        self, upstream: PartitionsDefinition | None, downstream: PartitionsDefinition | None
    ) -> str | None:
        """Why this mapping cannot join these two partitions definitions, or None."""
        return None

    @abc.abstractmethod
    def upstream_keys(self, key: str, up: KeySpace, down: KeySpace) -> Keys:
        """The upstream keys that downstream partition ``key`` depends on."""

    @abc.abstractmethod
    def downstream_keys(self, key: str, up: KeySpace, down: KeySpace) -> Keys:
        """The downstream keys that depend on upstream partition ``key``."""

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"


class IdentityMapping(PartitionMapping):
    """Downstream partition ``k`` depends on upstream partition ``k``."""

    def problem(
        self, upstream: PartitionsDefinition | None, downstream: PartitionsDefinition | None
    ) -> str | None:
        if upstream is None or downstream is None:
            return "an identity mapping needs both assets partitioned"
        if upstream.fingerprint() != downstream.fingerprint():
            return "an identity mapping needs one partitions definition on both sides"
        return None

    def upstream_keys(self, key: str, up: KeySpace, down: KeySpace) -> Keys:
        return [key] if up.index_of(key) is not None else []

    def downstream_keys(self, key: str, up: KeySpace, down: KeySpace) -> Keys:
        return [key] if down.index_of(key) is not None else []


class AllPartitionsMapping(PartitionMapping):
    """Every downstream partition depends on every upstream partition."""

    def upstream_keys(self, key: str, up: KeySpace, down: KeySpace) -> Keys:
        return EVERY

    def downstream_keys(self, key: str, up: KeySpace, down: KeySpace) -> Keys:
        return EVERY


class TimeWindowMapping(PartitionMapping):
    """A partition depends on the other side's partitions whose time windows overlap its own."""

    def problem(
        self, upstream: PartitionsDefinition | None, downstream: PartitionsDefinition | None
    ) -> str | None:
        if upstream is None or downstream is None:
            return "a time window mapping needs both assets partitioned"
        if upstream.kind is not PartitionsKind.TIME or downstream.kind is not PartitionsKind.TIME:
            return "a time window mapping needs time partitions on both sides"
        return None

    def upstream_keys(self, key: str, up: KeySpace, down: KeySpace) -> Keys:
        return overlapping(down.window(key), up)

    def downstream_keys(self, key: str, up: KeySpace, down: KeySpace) -> Keys:
        return overlapping(up.window(key), down)


class OffsetMapping(PartitionMapping):
    """Downstream partition ``k`` depends on the upstream key ``offset`` positions from ``k``.

    ``OffsetMapping(-1)`` on daily partitions is "yesterday's partition". Both assets must share
    one partitions definition.
    """

    def __init__(self, offset: int) -> None:
        self.offset = offset

    def problem(
        self, upstream: PartitionsDefinition | None, downstream: PartitionsDefinition | None
    ) -> str | None:
        if upstream is None or downstream is None:
            return "an offset mapping needs both assets partitioned"
        if upstream.fingerprint() != downstream.fingerprint():
            return "an offset mapping needs one partitions definition on both sides"
        return None

    def upstream_keys(self, key: str, up: KeySpace, down: KeySpace) -> Keys:
        return _shifted(key, down, up, self.offset)

    def downstream_keys(self, key: str, up: KeySpace, down: KeySpace) -> Keys:
        return _shifted(key, up, down, -self.offset)

    def __repr__(self) -> str:
        return f"OffsetMapping({self.offset})"


class StaticMapping(PartitionMapping):
    """An explicit map: ``{upstream_key: downstream_key or [downstream keys]}``."""

    def __init__(self, mapping: Mapping[str, str | Sequence[str]]) -> None:
        self.downstream_of: dict[str, tuple[str, ...]] = {}
        self.upstream_of: dict[str, list[str]] = {}
        for up_key, targets in mapping.items():
            down_keys = (targets,) if isinstance(targets, str) else tuple(targets)
            self.downstream_of[up_key] = down_keys
            for d in down_keys:
                self.upstream_of.setdefault(d, []).append(up_key)

    def problem(
        self, upstream: PartitionsDefinition | None, downstream: PartitionsDefinition | None
    ) -> str | None:
        if upstream is None or downstream is None:
            return "a static mapping needs both assets partitioned"
        return None

    def upstream_keys(self, key: str, up: KeySpace, down: KeySpace) -> Keys:
        return [k for k in self.upstream_of.get(key, ()) if up.index_of(k) is not None]

    def downstream_keys(self, key: str, up: KeySpace, down: KeySpace) -> Keys:
        return [k for k in self.downstream_of.get(key, ()) if down.index_of(k) is not None]


def default_mapping(
    upstream: PartitionsDefinition | None, downstream: PartitionsDefinition | None
) -> PartitionMapping | None:
    """The mapping a dependency gets when it names none; None when there is no sensible one."""
    if upstream is None or downstream is None:
        return AllPartitionsMapping()
    if upstream.fingerprint() == downstream.fingerprint():
        return IdentityMapping()
    if upstream.kind is PartitionsKind.TIME and downstream.kind is PartitionsKind.TIME:
        return TimeWindowMapping()
    return None


def _shifted(key: str, space: KeySpace, other: KeySpace, offset: int) -> list[str]:
    index = space.index_of(key)
    if index is None:
        return []
    target = index + offset
    if not 0 <= target < len(other):
        return []
    return [other.key_at(target)]


def overlapping(window: tuple[datetime, datetime] | None, space: KeySpace) -> list[str]:
    """The keys of ``space`` whose windows overlap ``window`` (half-open), oldest first."""
    if window is None or len(space) == 0:
        return []
    start, end = window
    first = max(0, _last_starting_at_or_before(space, start))
    last = _last_starting_at_or_before(space, end)
    # ``last`` starts at or before ``end``; drop it when it starts exactly at ``end``.
    if last >= 0 and _window(space, last)[0] >= end:
        last -= 1
    if last < first:
        return []
    if _window(space, first)[1] <= start:
        first += 1
    return space.keys(first, last + 1) if first <= last else []


def _window(space: KeySpace, index: int) -> tuple[datetime, datetime]:
    window = space.window(space.key_at(index))
    assert window is not None, "time partitions have windows"
    return window


def _last_starting_at_or_before(space: KeySpace, at: datetime) -> int:
    """The last index whose window starts at or before ``at`` (-1 when none does)."""
    lo, hi = 0, len(space)
    while lo < hi:
        mid = (lo + hi) // 2
        if _window(space, mid)[0] <= at:
            lo = mid + 1
        else:
            hi = mid
    return lo - 1
