"""The typed Python client, under the server's package name.

The client is its own distribution, ``backfiller-client`` (package ``backfiller_client``), so
that a laptop or a service that only launches backfills does not install the server. This
module keeps ``backfiller.client`` working for code written against the server package.
"""

from backfiller_client import (
    AsyncClient,
    Backfill,
    BackfillCounts,
    BackfillerAPIError,
    BackfillerAuthError,
    BackfillerConnectionError,
    BackfillerError,
    BackfillerTransportError,
    BackfillerUserError,
    BackfillEvent,
    BackfillStatus,
    Client,
    Job,
    PartitionsInfo,
    PartitionStatus,
    PartitionStatusRange,
    Preview,
    Run,
    RunStatus,
    SkippedPartition,
    Trigger,
    TriggerEvaluation,
    TriggerOutcome,
    TriggerRequestResult,
    UserErrorDetail,
)

__all__ = [
    "AsyncClient",
    "Backfill",
    "BackfillCounts",
    "BackfillEvent",
    "BackfillStatus",
    "BackfillerAPIError",
    "BackfillerAuthError",
    "BackfillerConnectionError",
    "BackfillerError",
    "BackfillerTransportError",
    "BackfillerUserError",
    "Client",
    "Job",
    "PartitionStatus",
    "PartitionStatusRange",
    "PartitionsInfo",
    "Preview",
    "Run",
    "RunStatus",
    "SkippedPartition",
    "Trigger",
    "TriggerEvaluation",
    "TriggerOutcome",
    "TriggerRequestResult",
    "UserErrorDetail",
]
