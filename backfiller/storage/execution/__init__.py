"""The daemon's data functions: plan, claim, start, finish, requeue, complete. Never commits.

One concept per module: ``planning`` (slots a window at a time), ``claims`` (pending slots to
leased runs, at most one active run per partition), ``ranges`` (chunks of them as ranged
runs), ``starts`` (the start gate's check), ``results`` (ends with fencing, and retries),
``late`` (a lost run's late end, while nothing replaced it), ``leases`` (daemon leases and
takeovers), ``completion`` (a backfill's own status). :class:`ExecutionRepository` gathers
them over one session.

Every state change is conditional: a slot moves only from the status it was read in, a run only
while it is active and leased to the caller, a backfill row only from the statuses the
transition table (``backfiller.domain``) allows. Counters on the backfills row change in the
same transaction as the slots they count, so
``pending + queued + running + succeeded + failed + canceled + skipped = total`` holds at every
commit.

Lock order, to stay free of deadlocks on PostgreSQL: a claim takes slots with ``FOR UPDATE SKIP
LOCKED`` (it never waits on a slot) and locks its backfill row last, by the update of its
counters (a plain claim: ``claims._count_queued``; a ranged or asset claim still locks it
first, for the limits it counts in runs); every other transaction locks runs and slots first
and backfill rows last, in id order.
"""

from __future__ import annotations

from backfiller.domain import ACTIVE_RUN_STATES, RunFinished
from backfiller.storage.execution.claims import Claim, ClaimConflict, ClaimedRun
from backfiller.storage.execution.common import ACTIVE, CHUNK
from backfiller.storage.execution.completion import CompletionRepository
from backfiller.storage.execution.leases import LeasesRepository
from backfiller.storage.execution.planning import PlannedSlot, PlanningRepository
from backfiller.storage.execution.ranges import (
    ClaimedRange,
    KeyIndex,
    RangeClaim,
    RangeClaimsRepository,
    RangeLimits,
)
from backfiller.storage.execution.results import (
    LogEntry,
    Outcomes,
    ResultsRepository,
    RetryRule,
    RunStart,
)
from backfiller.storage.execution.starts import StartGate, may_start


class ExecutionRepository(
    PlanningRepository,
    RangeClaimsRepository,
    ResultsRepository,
    LeasesRepository,
    CompletionRepository,
):
    """Every execution concern over one session (each lives in its own module)."""


__all__ = [
    "ACTIVE",
    "ACTIVE_RUN_STATES",
    "CHUNK",
    "Claim",
    "ClaimConflict",
    "ClaimedRange",
    "ClaimedRun",
    "ExecutionRepository",
    "KeyIndex",
    "LogEntry",
    "Outcomes",
    "PlannedSlot",
    "RangeClaim",
    "RangeLimits",
    "RetryRule",
    "RunFinished",
    "RunStart",
    "StartGate",
    "may_start",
]
