"""The interface of partitions definitions: the definition, its key space, its description."""

from __future__ import annotations

import abc
import enum
import hashlib
import json
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Protocol, runtime_checkable


class PartitionsKind(enum.StrEnum):
    """The family a partitions definition belongs to."""

    TIME = "time"
    STATIC = "static"
    DYNAMIC = "dynamic"


@dataclass(frozen=True)
class PartitionsDescription:
    """A plain description of a partitions definition, for display and the API.

    Attributes:
        kind: The family of the definition.
        cadence: ``"hourly"``, ``"daily"``, ``"weekly"``, ``"monthly"`` or ``"cron"`` for time
            partitions, else None.
        start: The (inclusive) start bound as given, aware, in the definition's timezone.
        end: The exclusive end bound, or None when open-ended.
        timezone: IANA timezone name of time partitions.
        fmt: ``strftime`` format of the keys.
        cron: The cron expression (an equivalent one for hourly/daily/weekly/monthly).
        static_keys: The keys of static partitions.
        dynamic_name: The name of the dynamic partitions set.
    """

    kind: PartitionsKind
    cadence: str | None = None
    start: datetime | None = None
    end: datetime | None = None
    timezone: str | None = None
    fmt: str | None = None
    cron: str | None = None
    static_keys: tuple[str, ...] | None = None
    dynamic_name: str | None = None


@runtime_checkable
class KeySpace(Protocol):
    """An ordered, finite snapshot of partition keys, oldest first."""

    def __len__(self) -> int: ...

    def key_at(self, index: int) -> str:
        """Return the key at ``index``; IndexError outside ``[0, len)``."""
        ...

    def index_of(self, key: str) -> int | None:
        """Return the index of ``key``, or None when it is not a partition of this space."""
        ...

    def indexes_of(self, keys: Sequence[str]) -> list[int | None]:
        """Return ``index_of`` of each key, in order: a long list in one pass."""
        ...

    def keys(self, start: int, stop: int) -> list[str]:
        """Return the keys of ``[start, stop)``, both clamped to ``[0, len]``."""
        ...

    def window(self, key: str) -> tuple[datetime, datetime] | None:
        """Return the aware ``[start, end)`` window of ``key``; None for non-time partitions."""
        ...


class PartitionsDefinition(abc.ABC):
    """The set of partition keys of a job or asset.

    Attributes:
        kind: The family of the definition.
    """

    kind: PartitionsKind

    @abc.abstractmethod
    def key_space(self, now: datetime, dynamic_keys: Sequence[str] = ()) -> KeySpace:
        """Return the keys as of ``now`` (aware).

        Args:
            now: The current time; bounds open-ended time partitions.
            dynamic_keys: The stored keys of dynamic partitions, in order (ignored otherwise).
        """

    @abc.abstractmethod
    def fingerprint(self) -> str:
        """Return a short, stable hash of the definition's parameters."""

    @abc.abstractmethod
    def describe(self) -> PartitionsDescription:
        """Return a plain description of the definition."""

    @abc.abstractmethod
    def validate_key(self, key: str) -> str | None:
        """Return a human message when ``key`` is malformed for this definition, else None.

        Membership is not checked here: use ``key_space(...).index_of(key)``.
        """

    def __repr__(self) -> str:
        return f"{type(self).__name__}(fingerprint={self.fingerprint()!r})"


def _hash(payload: dict[str, object]) -> str:
    text = json.dumps(payload, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]
