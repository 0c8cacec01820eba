"""The typed Python client of Backfiller's public GraphQL API.

Example:
    >>> import backfiller
    >>> client = backfiller.Client("http://127.0.0.1:8000")  # doctest: +SKIP
"""

from backfiller.client.client import AsyncClient, Client
from backfiller.client.errors import (
    BackfillerAPIError,
    BackfillerAuthError,
    BackfillerConnectionError,
    BackfillerError,
    BackfillerTransportError,
    BackfillerUserError,
    UserErrorDetail,
)
from backfiller.client.types import (
    Backfill,
    BackfillCounts,
    BackfillEvent,
    BackfillStatus,
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
