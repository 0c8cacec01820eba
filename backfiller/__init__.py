"""Backfiller: launch, run and watch backfills through a stable, typed public API.

The public Python API is what ``__all__`` lists; everything else may change in any release.
"""

from backfiller.definitions.jobs import JobDefinition, RetryPolicy, RunContext, job
from backfiller.definitions.loading import Definitions, DefinitionsError, load_definitions
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

__version__ = "0.1.0"

__all__ = [
    "DailyPartitions",
    "Definitions",
    "DefinitionsError",
    "DynamicPartitions",
    "HourlyPartitions",
    "JobDefinition",
    "MonthlyPartitions",
    "PartitionsDefinition",
    "RetryPolicy",
    "RunContext",
    "StaticPartitions",
    "TimePartitions",
    "WeeklyPartitions",
    "__version__",
    "job",
    "load_definitions",
]
