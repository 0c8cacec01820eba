"""``BackfillRequest`` under the server's package name.

It lives in the client distribution (``backfiller_client.requests``), which the server
depends on: users build the same request in a trigger, a job, or a script that has only the
client installed.
"""

from backfiller_client.requests import (
    ORDER_VALUES,
    REPROCESS_VALUES,
    AllPartitions,
    AssetSelection,
    BackfillRequest,
    Order,
    PartitionKeys,
    PartitionRange,
    PartitionSelection,
    Reprocess,
    plain_json,
)

__all__ = [
    "ORDER_VALUES",
    "REPROCESS_VALUES",
    "AllPartitions",
    "AssetSelection",
    "BackfillRequest",
    "Order",
    "PartitionKeys",
    "PartitionRange",
    "PartitionSelection",
    "Reprocess",
    "plain_json",
]
