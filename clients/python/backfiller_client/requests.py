"""``BackfillRequest``: the public, narrow Python description of a backfill to launch.

It carries the same fields as the public ``LaunchBackfillInput`` and nothing else. It is what
users construct (in a trigger, a script or a job) and what the client sends; it is never the
stored record, so the storage may change without breaking code that builds requests.

Only the *shape* is checked here (types, non-empty names). Everything that depends on the
job or the database (unknown job, bad partition key, run config against the job's schema,
limits) is checked once, by the server, and comes back as user errors.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Literal, TypeAlias, get_args

Reprocess: TypeAlias = Literal["MISSING", "FAILED_AND_MISSING", "ALL"]
"""Which partitions run again: ``MISSING`` (never ran), ``FAILED_AND_MISSING``, or ``ALL``."""

Order: TypeAlias = Literal["OLDEST_FIRST", "NEWEST_FIRST"]
"""In which order partitions are launched."""

REPROCESS_VALUES: tuple[str, ...] = get_args(Reprocess)
ORDER_VALUES: tuple[str, ...] = get_args(Order)


@dataclass(frozen=True, slots=True)
class PartitionRange:
    """Partitions from ``start`` to ``end``, both included.

    Example:
        >>> PartitionRange("2024-01-01", "2024-01-31")
        PartitionRange(start='2024-01-01', end='2024-01-31')
    """

    start: str
    end: str

    def __post_init__(self) -> None:
        if not isinstance(self.start, str) or not isinstance(self.end, str):
            raise TypeError("PartitionRange start and end must be partition keys (str)")


@dataclass(frozen=True, slots=True, init=False)
class PartitionKeys:
    """An explicit list of partition keys, kept in the given order.

    Example:
        >>> PartitionKeys(["emea", "apac"])
        PartitionKeys(keys=('emea', 'apac'))
    """

    keys: tuple[str, ...]

    def __init__(self, keys: Iterable[str]) -> None:
        if isinstance(keys, str):
            raise TypeError("PartitionKeys takes a list of keys, not one string")
        found = tuple(keys)
        if not all(isinstance(k, str) for k in found):
            raise TypeError("partition keys must be strings")
        object.__setattr__(self, "keys", found)


@dataclass(frozen=True, slots=True)
class AllPartitions:
    """Every partition the job has at launch time."""


PartitionSelection: TypeAlias = PartitionRange | PartitionKeys | AllPartitions
"""One of :class:`PartitionRange`, :class:`PartitionKeys` or :class:`AllPartitions`."""


@dataclass(frozen=True, slots=True, init=False)
class AssetSelection:
    """Assets to backfill: ``names``, and optionally everything up or downstream of them.

    Example:
        >>> AssetSelection(["daily_visits"], downstream=True).names
        ('daily_visits',)
    """

    names: tuple[str, ...]
    upstream: bool
    downstream: bool

    def __init__(
        self, names: Iterable[str], upstream: bool = False, downstream: bool = False
    ) -> None:
        if isinstance(names, str):
            raise TypeError("AssetSelection.names must be a list of asset names, not a str")
        listed = tuple(names)
        if not listed or not all(isinstance(n, str) and n for n in listed):
            raise TypeError("AssetSelection.names must be non-empty asset names")
        object.__setattr__(self, "names", listed)
        object.__setattr__(self, "upstream", bool(upstream))
        object.__setattr__(self, "downstream", bool(downstream))

    def as_graphql_input(self) -> dict[str, Any]:
        return {"names": list(self.names), "upstream": self.upstream, "downstream": self.downstream}


_REQUIRED: Any = object()


@dataclass(frozen=True, slots=True)
class BackfillRequest:
    """A backfill to launch: a job, or assets, over a partition selection.

    Args:
        job: The job's name (or None with ``assets``).
        partitions: A :class:`PartitionRange`, :class:`PartitionKeys` or :class:`AllPartitions`;
            with ``assets``, partitions of the root assets' partitions definition.
        reprocess: Which partitions run again (``MISSING`` by default: only what never ran).
        order: ``OLDEST_FIRST`` (default) or ``NEWEST_FIRST``.
        max_concurrent_runs: At most this many runs of this backfill at once.
        run_config: Given to every run; validated by the server against the job's schema.
        tags: Free-form ``key -> value`` labels, filterable in lists.
        title: A short name shown in the UI.
        description: A longer text shown in the UI.
        idempotency_key: Launching the same request with the same key twice creates one
            backfill; the same key with another request is refused.
        assets: An :class:`AssetSelection` instead of ``job``: an asset backfill, run in
            dependency order.
        priority: Higher priorities are claimed first (and get a bigger share of the room);
            None: the job's default (0 unless the job names one).

    Example:
        >>> BackfillRequest(
        ...     job="daily_sales",
        ...     partitions=PartitionRange("2024-01-01", "2024-01-31"),
        ...     title="January rerun",
        ... ).job
        'daily_sales'
    """

    job: str | None = None
    partitions: PartitionSelection = _REQUIRED
    reprocess: Reprocess = "MISSING"
    order: Order = "OLDEST_FIRST"
    max_concurrent_runs: int | None = None
    run_config: Mapping[str, Any] | None = None
    tags: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}))
    title: str | None = None
    description: str | None = None
    idempotency_key: str | None = None
    assets: AssetSelection | None = None
    priority: int | None = None

    def __post_init__(self) -> None:
        if self.partitions is _REQUIRED:
            raise TypeError("BackfillRequest needs partitions")
        if self.assets is not None:
            if not isinstance(self.assets, AssetSelection) or self.job is not None:
                raise TypeError("BackfillRequest takes either a job or an AssetSelection")
        elif not isinstance(self.job, str) or not self.job:
            raise TypeError("BackfillRequest.job must be a job name")
        if not isinstance(self.partitions, PartitionRange | PartitionKeys | AllPartitions):
            raise TypeError(
                "BackfillRequest.partitions must be PartitionRange, PartitionKeys or "
                f"AllPartitions, got {self.partitions!r}"
            )
        if self.reprocess not in REPROCESS_VALUES:
            raise ValueError(f"reprocess must be one of {', '.join(REPROCESS_VALUES)}")
        if self.order not in ORDER_VALUES:
            raise ValueError(f"order must be one of {', '.join(ORDER_VALUES)}")
        mcr = self.max_concurrent_runs
        if mcr is not None and (not isinstance(mcr, int) or isinstance(mcr, bool)):
            raise TypeError("max_concurrent_runs must be an int or None")
        prio = self.priority
        if prio is not None and (not isinstance(prio, int) or isinstance(prio, bool)):
            raise TypeError("priority must be an int or None")
        if self.run_config is not None:
            if not isinstance(self.run_config, Mapping):
                raise TypeError("run_config must be a mapping or None")
            frozen_config = MappingProxyType(copy.deepcopy(dict(self.run_config)))
            object.__setattr__(self, "run_config", frozen_config)
        if not isinstance(self.tags, Mapping) or not all(
            isinstance(k, str) and isinstance(v, str) for k, v in self.tags.items()
        ):
            raise TypeError("tags must be a mapping of str to str")
        object.__setattr__(self, "tags", MappingProxyType(dict(self.tags)))
        for name in ("title", "description", "idempotency_key"):
            value = getattr(self, name)
            if value is not None and not isinstance(value, str):
                raise TypeError(f"{name} must be a str or None")

    def as_graphql_input(self) -> dict[str, Any]:
        """This request as the variables of a ``LaunchBackfillInput`` (camelCase JSON)."""
        selection: dict[str, Any]
        match self.partitions:
            case PartitionRange(start=start, end=end):
                selection = {"range": {"start": start, "end": end}}
            case PartitionKeys(keys=keys):
                selection = {"keys": list(keys)}
            case AllPartitions():
                selection = {"all": True}
        result: dict[str, Any] = {
            "target": (
                {"assets": self.assets.as_graphql_input()}
                if self.assets is not None
                else {"job": self.job}
            ),
            "partitions": selection,
            "reprocess": self.reprocess,
            "order": self.order,
            "tags": [{"key": k, "value": v} for k, v in self.tags.items()],
        }
        if self.max_concurrent_runs is not None:
            result["maxConcurrentRuns"] = self.max_concurrent_runs
        if self.run_config is not None:
            result["runConfig"] = plain_json(self.run_config)
        if self.title is not None:
            result["title"] = self.title
        if self.description is not None:
            result["description"] = self.description
        if self.idempotency_key is not None:
            result["idempotencyKey"] = self.idempotency_key
        if self.priority is not None:
            result["priority"] = self.priority
        return result


def plain_json(value: Any) -> Any:
    """``value`` with read-only mappings turned back into dicts (for JSON encoders)."""
    if isinstance(value, Mapping):
        return {k: plain_json(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [plain_json(v) for v in value]
    return value


__all__ = [
    "AllPartitions",
    "AssetSelection",
    "BackfillRequest",
    "Order",
    "PartitionKeys",
    "PartitionRange",
    "PartitionSelection",
    "Reprocess",
]
