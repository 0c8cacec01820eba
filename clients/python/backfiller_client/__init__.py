"""The typed Python client of Backfiller's public GraphQL API, and the remote CLI.

This is the ``backfiller-client`` distribution: it needs httpx (and typer and rich for the
CLI), nothing of the server. With the server installed (the ``backfiller`` distribution,
which depends on this one), ``import backfiller`` gives the same names beside the job
definitions.

Example:
    >>> import backfiller_client
    >>> client = backfiller_client.Client("http://127.0.0.1:8000")  # doctest: +SKIP
"""

from typing import TYPE_CHECKING, Any

from backfiller_client._version import __version__
from backfiller_client.errors import (
    BackfillerAPIError,
    BackfillerAuthError,
    BackfillerConnectionError,
    BackfillerError,
    BackfillerTransportError,
    BackfillerUserError,
    UserErrorDetail,
)
from backfiller_client.requests import (
    AllPartitions,
    AssetSelection,
    BackfillRequest,
    PartitionKeys,
    PartitionRange,
)
from backfiller_client.types import (
    Asset,
    AssetPartition,
    AssetPreview,
    Backfill,
    BackfillAsset,
    BackfillCounts,
    BackfillEvent,
    BackfillStatus,
    Job,
    PartitionMark,
    PartitionMarkStatus,
    PartitionsInfo,
    PartitionStatus,
    PartitionStatusRange,
    Preview,
    Run,
    RunStatus,
    RunWorker,
    SkippedPartition,
    Trigger,
    TriggerCatchUp,
    TriggerEvaluation,
    TriggerOutcome,
    TriggerRequestResult,
    WaitingPartition,
)

if TYPE_CHECKING:
    from backfiller_client.client import AsyncClient, Client


def __getattr__(name: str) -> Any:
    # The clients (and httpx under them) load on first use, so that `import backfiller` for
    # job definitions, and the command line, start fast.
    if name in ("AsyncClient", "Client"):
        from backfiller_client import client

        return getattr(client, name)
    raise AttributeError(f"module 'backfiller_client' has no attribute {name!r}")


__all__ = [
    "AllPartitions",
    "Asset",
    "AssetPartition",
    "AssetPreview",
    "AssetSelection",
    "AsyncClient",
    "Backfill",
    "BackfillAsset",
    "BackfillCounts",
    "BackfillEvent",
    "BackfillRequest",
    "BackfillStatus",
    "BackfillerAPIError",
    "BackfillerAuthError",
    "BackfillerConnectionError",
    "BackfillerError",
    "BackfillerTransportError",
    "BackfillerUserError",
    "Client",
    "Job",
    "PartitionKeys",
    "PartitionMark",
    "PartitionMarkStatus",
    "PartitionRange",
    "PartitionStatus",
    "PartitionStatusRange",
    "PartitionsInfo",
    "Preview",
    "Run",
    "RunStatus",
    "RunWorker",
    "SkippedPartition",
    "Trigger",
    "TriggerCatchUp",
    "TriggerEvaluation",
    "TriggerOutcome",
    "TriggerRequestResult",
    "UserErrorDetail",
    "WaitingPartition",
    "__version__",
]
