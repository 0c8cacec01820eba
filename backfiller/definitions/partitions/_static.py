"""Partitions that are a list of keys: static (given in code) and dynamic (stored)."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from backfiller.definitions.partitions._definition import (
    KeySpace,
    PartitionsDefinition,
    PartitionsDescription,
    PartitionsKind,
    _hash,
)


class _ListKeySpace:
    """A key space over an explicit list of keys."""

    def __init__(self, keys: tuple[str, ...], index: dict[str, int]) -> None:
        self._keys = keys
        self._index = index

    def __len__(self) -> int:
        return len(self._keys)

    def key_at(self, index: int) -> str:
        if not 0 <= index < len(self._keys):
            raise IndexError(f"partition index {index} outside [0, {len(self._keys)})")
        return self._keys[index]

    def index_of(self, key: str) -> int | None:
        return self._index.get(key)

    def indexes_of(self, keys: Sequence[str]) -> list[int | None]:
        return list(map(self._index.get, keys))

    def keys(self, start: int, stop: int) -> list[str]:
        n = len(self._keys)
        return list(self._keys[min(max(start, 0), n) : min(max(stop, 0), n)])

    def window(self, key: str) -> tuple[datetime, datetime] | None:
        return None

    def __repr__(self) -> str:
        return f"_ListKeySpace(len={len(self._keys)})"


def _checked_keys(keys: Sequence[str], what: str) -> tuple[tuple[str, ...], dict[str, int]]:
    if isinstance(keys, str | bytes):
        raise ValueError(f"{what} must be a sequence of strings, not a single string")
    out = tuple(keys)
    index: dict[str, int] = {}
    for i, key in enumerate(out):
        if not isinstance(key, str):
            raise ValueError(f"{what}: key at position {i} is not a string: {key!r}")
        if not key:
            raise ValueError(f"{what}: key at position {i} is the empty string")
        if key in index:
            raise ValueError(f"{what}: duplicate key {key!r} (positions {index[key]} and {i})")
        index[key] = i
    return out, index


class StaticPartitions(PartitionsDefinition):
    """A fixed list of keys, in the given order.

    Args:
        keys: The partition keys: non-empty, distinct strings.

    Raises:
        ValueError: On an empty-string key or a duplicate.
    """

    kind = PartitionsKind.STATIC

    def __init__(self, keys: Sequence[str]) -> None:
        self._keys, self._index = _checked_keys(keys, "StaticPartitions")
        self._space = _ListKeySpace(self._keys, self._index)
        # Hashing every key is not free; every launch asks for it.
        self._fingerprint = _hash({"v": 1, "kind": "static", "keys": list(self._keys)})

    @property
    def static_keys(self) -> tuple[str, ...]:
        """The keys, in order."""
        return self._keys

    def key_space(self, now: datetime, dynamic_keys: Sequence[str] = ()) -> KeySpace:
        return self._space

    def fingerprint(self) -> str:
        return self._fingerprint

    def describe(self) -> PartitionsDescription:
        return PartitionsDescription(kind=self.kind, static_keys=self._keys)

    def validate_key(self, key: str) -> str | None:
        return None


class DynamicPartitions(PartitionsDefinition):
    """A named set of keys stored in the database and passed to ``key_space``.

    Args:
        name: The name of the set (non-empty).

    Raises:
        ValueError: On an empty name.
    """

    kind = PartitionsKind.DYNAMIC

    def __init__(self, name: str) -> None:
        if not isinstance(name, str) or not name.strip():
            raise ValueError("DynamicPartitions name must be a non-empty string")
        self.name = name

    def key_space(self, now: datetime, dynamic_keys: Sequence[str] = ()) -> KeySpace:
        """Return the given keys, in the given order.

        Raises:
            ValueError: On an empty-string key or a duplicate in ``dynamic_keys``.
        """
        keys, index = _checked_keys(dynamic_keys, f"DynamicPartitions({self.name!r})")
        return _ListKeySpace(keys, index)

    def fingerprint(self) -> str:
        return _hash({"v": 1, "kind": "dynamic", "name": self.name})

    def describe(self) -> PartitionsDescription:
        return PartitionsDescription(kind=self.kind, dynamic_name=self.name)

    def validate_key(self, key: str) -> str | None:
        return None
