"""Backfiller: launch, run and watch backfills through a stable, typed public API.

The public Python API is what ``__all__`` lists; everything else may change in any release.
"""

from typing import TYPE_CHECKING, Any

from backfiller.definitions.assets import AssetDefinition, Dep, asset
from backfiller.definitions.jobs import JobDefinition, RetryPolicy, RunContext, job
from backfiller.definitions.loading import Definitions, DefinitionsError, load_definitions
from backfiller.definitions.mappings import (
    AllPartitionsMapping,
    IdentityMapping,
    OffsetMapping,
    PartitionMapping,
    StaticMapping,
    TimeWindowMapping,
)
from backfiller.definitions.partitions import (
    DailyPartitions,
    DynamicPartitions,
    HourlyPartitions,
    MonthlyPartitions,
    PartitionsDefinition,
    StaticPartitions,
    TimePartitions,
    WeeklyPartitions,
)
from backfiller.definitions.policies import BackfillPolicy, multi_run, single_run
from backfiller.definitions.triggers import (
    PartitionStatuses,
    SkipReason,
    TriggerContext,
    TriggerDefinition,
    trigger,
)
from backfiller_client._version import __version__
from backfiller_client.requests import (
    AllPartitions,
    AssetSelection,
    BackfillRequest,
    PartitionKeys,
    PartitionRange,
)

if TYPE_CHECKING:
    from backfiller_client import (
        AsyncClient,
        BackfillerAPIError,
        BackfillerAuthError,
        BackfillerConnectionError,
        BackfillerError,
        BackfillerTransportError,
        BackfillerUserError,
        Client,
    )

# The client (httpx; the backfiller-client distribution) loads on first use, so that
# defining jobs and starting the command line stay fast.
_CLIENT_NAMES = frozenset(
    {
        "AsyncClient",
        "BackfillerAPIError",
        "BackfillerAuthError",
        "BackfillerConnectionError",
        "BackfillerError",
        "BackfillerTransportError",
        "BackfillerUserError",
        "Client",
    }
)


def __getattr__(name: str) -> Any:
    if name in _CLIENT_NAMES:
        import backfiller_client

        return getattr(backfiller_client, name)
    raise AttributeError(f"module 'backfiller' has no attribute {name!r}")


__all__ = [
    "AllPartitions",
    "AllPartitionsMapping",
    "AssetDefinition",
    "AssetSelection",
    "AsyncClient",
    "BackfillPolicy",
    "BackfillRequest",
    "BackfillerAPIError",
    "BackfillerAuthError",
    "BackfillerConnectionError",
    "BackfillerError",
    "BackfillerTransportError",
    "BackfillerUserError",
    "Client",
    "DailyPartitions",
    "Definitions",
    "DefinitionsError",
    "Dep",
    "DynamicPartitions",
    "HourlyPartitions",
    "IdentityMapping",
    "JobDefinition",
    "MonthlyPartitions",
    "OffsetMapping",
    "PartitionKeys",
    "PartitionMapping",
    "PartitionRange",
    "PartitionStatuses",
    "PartitionsDefinition",
    "RetryPolicy",
    "RunContext",
    "SkipReason",
    "StaticMapping",
    "StaticPartitions",
    "TimePartitions",
    "TimeWindowMapping",
    "TriggerContext",
    "TriggerDefinition",
    "WeeklyPartitions",
    "__version__",
    "asset",
    "job",
    "load_definitions",
    "multi_run",
    "single_run",
    "trigger",
]
