"""Assets: partitioned data products with upstream dependencies, declared with :func:`asset`.

An asset runs like a job (its function receives the same :class:`RunContext`, once per
partition), and an asset backfill runs its partitions in dependency order: a partition starts as
soon as every upstream partition it depends on within the backfill has succeeded.

Example:
    >>> @asset(partitions=DailyPartitions(start="2024-01-01"))
    ... def raw_events(context: RunContext) -> None: ...
    >>> @asset(partitions=MonthlyPartitions(start="2024-01-01"), deps=["raw_events"])
    ... def monthly_report(context: RunContext) -> None: ...
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from backfiller.definitions.jobs import (
    JOB_NAME,
    JobDefinition,
    JobFunction,
    RetryPolicy,
    job,
)
from backfiller.definitions.mappings import PartitionMapping
from backfiller.definitions.partitions import PartitionsDefinition, StaticPartitions
from backfiller.definitions.policies import BackfillPolicy
from backfiller.domain import DEFAULT_LOST_WORKER_RETRIES

UNPARTITIONED_KEY = "default"
"""The one partition key of an unpartitioned asset."""

_UNPARTITIONED = StaticPartitions([UNPARTITIONED_KEY])


@dataclass(frozen=True, slots=True)
class Dep:
    """A dependency on an upstream asset, with an optional partition mapping.

    Without a mapping, the default applies: identity between assets of one partitions
    definition, time windows between time partitions of different cadences, every partition
    when either asset is unpartitioned.
    """

    asset: str
    mapping: PartitionMapping | None = None


@dataclass(frozen=True)
class AssetDefinition:
    """A partitioned (or unpartitioned) asset: declared with :func:`asset`."""

    name: str
    job: JobDefinition
    """How one partition of the asset runs (name, function, retries, limits, timeout)."""
    partitions: PartitionsDefinition | None
    """None for an unpartitioned asset (one partition, :data:`UNPARTITIONED_KEY`)."""
    deps: tuple[Dep, ...] = ()
    queue: str | None = None
    tags: Mapping[str, str] = field(default_factory=dict)

    @property
    def key_partitions(self) -> PartitionsDefinition:
        """The partitions its runs use: its own, or the single unpartitioned key."""
        return self.partitions if self.partitions is not None else _UNPARTITIONED

    @property
    def description(self) -> str | None:
        return self.job.description


DepLike = str | Dep | AssetDefinition


def asset(
    *,
    partitions: PartitionsDefinition | None = None,
    deps: Sequence[DepLike] = (),
    name: str | None = None,
    retry: RetryPolicy | None = None,
    max_concurrent_runs: int | None = None,
    timeout_seconds: float | None = None,
    lost_worker_retries: int = DEFAULT_LOST_WORKER_RETRIES,
    queue: str | None = None,
    config: Mapping[str, Any] | type | None = None,
    tags: Mapping[str, str] | None = None,
    description: str | None = None,
    backfill_policy: BackfillPolicy | None = None,
) -> Callable[[JobFunction], AssetDefinition]:
    """Declare an asset over a function that takes a :class:`RunContext`.

    Args:
        partitions: its partitions definition; None for an unpartitioned asset.
        deps: upstream assets, by name, definition or :class:`Dep` (with a mapping).
        queue: the launcher queue its runs go to (launchers that have queues).
        backfill_policy: ``single_run()`` or ``multi_run(N)``: an asset backfill runs chunks
            of its consecutive partitions, one run each, once their upstream partitions are
            done (see docs/ranged-runs.md).

    The other arguments are those of :func:`backfiller.job`.
    """

    def decorate(fn: JobFunction) -> AssetDefinition:
        asset_name: str = name or str(getattr(fn, "__name__", ""))
        if not JOB_NAME.match(asset_name):
            raise ValueError(f"invalid asset name {asset_name!r}")
        runs_as = job(
            partitions=partitions if partitions is not None else _UNPARTITIONED,
            name=asset_name,
            retry=retry,
            max_concurrent_runs=max_concurrent_runs,
            timeout_seconds=timeout_seconds,
            lost_worker_retries=lost_worker_retries,
            config=config,
            tags=tags,
            description=description,
            backfill_policy=backfill_policy,
        )(fn)
        return AssetDefinition(
            name=asset_name,
            job=runs_as,
            partitions=partitions,
            deps=tuple(_dep(d, asset_name) for d in deps),
            queue=queue,
            tags=dict(tags or {}),
        )

    return decorate


def _dep(value: DepLike, of: str) -> Dep:
    if isinstance(value, Dep):
        return value
    if isinstance(value, AssetDefinition):
        return Dep(value.name)
    if isinstance(value, str):
        return Dep(value)
    raise TypeError(f"asset {of!r}: a dependency must be an asset name, an asset or a Dep")
