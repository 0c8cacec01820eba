"""Triggers: user functions that decide whether to launch backfills.

A trigger is evaluated on a button (UI, CLI, ``evaluateTrigger``), on an interval by the
daemon, or from a running job through the client. It returns a :class:`BackfillRequest`, a
list of them, or a :class:`SkipReason`; the service launches what it returns through the same
path as ``launchBackfill`` and records every evaluation with its outcome.

Example:
    >>> @trigger(interval_seconds=3600, description="Rebuild days whose input landed")
    ... def landed_days(context: TriggerContext) -> BackfillRequest | SkipReason:
    ...     missing = context.partition_statuses("daily_sales").never_ran
    ...     if not missing:
    ...         return SkipReason("every day already ran")
    ...     return BackfillRequest(job="daily_sales", partitions=PartitionKeys(missing))
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Literal, Protocol, TypeAlias, overload

from backfiller.definitions.requests import BackfillRequest

if TYPE_CHECKING:
    from backfiller.client import Client

TRIGGER_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_.-]{0,199}$")
DEFAULT_TIMEOUT_SECONDS = 60.0
MIN_INTERVAL_SECONDS = 1.0
MAX_CURSOR_LENGTH = 64_000


@dataclass(frozen=True, slots=True)
class SkipReason:
    """What a trigger returns when it decides to launch nothing, and why.

    Example:
        >>> SkipReason("the upstream export has not landed yet")
        SkipReason(message='the upstream export has not landed yet')
    """

    message: str = ""

    def __post_init__(self) -> None:
        if not isinstance(self.message, str):
            raise TypeError("SkipReason takes a message (str)")


TriggerResult: TypeAlias = BackfillRequest | SkipReason | Sequence[BackfillRequest]
"""What a trigger function returns."""

PartitionRunStatus = Literal["SUCCEEDED", "FAILED", "QUEUED", "RUNNING", "CANCELED", "NEVER_RAN"]


@dataclass(frozen=True)
class PartitionStatuses:
    """A read-only view of a job's partitions and the outcome of their latest run.

    The latest run is taken across all backfills. Keys are in partition order (oldest first).
    """

    job: str
    keys: tuple[str, ...]
    latest: Mapping[str, PartitionRunStatus]

    def status_of(self, key: str) -> PartitionRunStatus:
        """The latest outcome of ``key``, or ``NEVER_RAN``."""
        return self.latest.get(key, "NEVER_RAN")

    def _having(self, status: PartitionRunStatus) -> tuple[str, ...]:
        return tuple(k for k in self.keys if self.status_of(k) == status)

    @property
    def succeeded(self) -> tuple[str, ...]:
        """Partitions whose latest run succeeded."""
        return self._having("SUCCEEDED")

    @property
    def failed(self) -> tuple[str, ...]:
        """Partitions whose latest run failed."""
        return self._having("FAILED")

    @property
    def never_ran(self) -> tuple[str, ...]:
        """Partitions that no backfill ever ran."""
        return self._having("NEVER_RAN")

    @property
    def in_flight(self) -> tuple[str, ...]:
        """Partitions with a queued or running run."""
        return tuple(k for k in self.keys if self.status_of(k) in ("QUEUED", "RUNNING"))


@dataclass(frozen=True, slots=True)
class PreviousEvaluation:
    """A past evaluation of the same trigger, as its function sees it."""

    outcome: Literal["LAUNCHED", "SKIPPED", "FAILED"]
    evaluated_at: datetime
    dry_run: bool
    skip_reason: str | None
    error_message: str | None
    backfill_ids: tuple[str, ...]


class TriggerContext:
    """What a trigger function receives.

    Attributes:
        trigger_name: The trigger being evaluated.
        now: The time of the evaluation (aware, UTC).
        cursor: A string the trigger keeps between evaluations; set it to remember where it
            got. It is saved when the evaluation ends without error and is not a dry run.
        previous_evaluations: The latest recorded evaluations, newest first.
        dry_run: True when nothing will be launched (the "test" button).
        log: A logger for the trigger.
    """

    def __init__(
        self,
        *,
        trigger_name: str,
        now: datetime,
        cursor: str | None,
        previous_evaluations: Sequence[PreviousEvaluation],
        dry_run: bool,
        partition_reader: Callable[[str], PartitionStatuses],
        client_factory: Callable[[], Client] | None = None,
        log: logging.Logger | None = None,
    ) -> None:
        self.trigger_name = trigger_name
        self.now = now
        self.cursor = cursor
        self.previous_evaluations = tuple(previous_evaluations)
        self.dry_run = dry_run
        self.log = log or logging.getLogger(f"backfiller.trigger.{trigger_name}")
        self._partition_reader = partition_reader
        self._client_factory = client_factory
        self._client: Client | None = None

    def partition_statuses(self, job: str) -> PartitionStatuses:
        """Which partitions of ``job`` succeeded, failed or never ran (read-only).

        Raises:
            LookupError: When no job of that name is defined.
        """
        return self._partition_reader(job)

    @property
    def client(self) -> Client:
        """A client of the public API, pointed at this service.

        Raises:
            RuntimeError: When the daemon evaluating the trigger was not told the service's
                URL (``--api-url`` or ``BACKFILLER_URL``).
        """
        if self._client is None:
            if self._client_factory is None:
                raise RuntimeError(
                    "this evaluation has no service URL to talk to: give the daemon "
                    "--api-url (or BACKFILLER_URL)"
                )
            self._client = self._client_factory()
        return self._client

    def close(self) -> None:
        """Close the client, if one was made (the service calls this after the function)."""
        if self._client is not None:
            self._client.close()
            self._client = None


class TriggerFunction(Protocol):
    def __call__(self, context: TriggerContext, /) -> TriggerResult: ...


@dataclass(frozen=True)
class TriggerDefinition:
    """A trigger: declared with :func:`trigger`."""

    name: str
    fn: TriggerFunction = field(repr=False)
    interval_seconds: float | None = None
    timeout_seconds: float = DEFAULT_TIMEOUT_SECONDS
    description: str | None = None
    team: str | None = None
    """The team its launches act for; None: the team of whoever evaluates it (none for the
    daemon's evaluations)."""

    def __call__(self, context: TriggerContext) -> TriggerResult:
        return self.fn(context)


@overload
def trigger(fn: TriggerFunction, /) -> TriggerDefinition: ...


@overload
def trigger(
    *,
    name: str | None = None,
    interval_seconds: float | None = None,
    timeout_seconds: float = DEFAULT_TIMEOUT_SECONDS,
    description: str | None = None,
    team: str | None = None,
) -> Callable[[TriggerFunction], TriggerDefinition]: ...


def trigger(
    fn: TriggerFunction | None = None,
    /,
    *,
    name: str | None = None,
    interval_seconds: float | None = None,
    timeout_seconds: float = DEFAULT_TIMEOUT_SECONDS,
    description: str | None = None,
    team: str | None = None,
) -> TriggerDefinition | Callable[[TriggerFunction], TriggerDefinition]:
    """Declare a trigger over a function ``(context) -> BackfillRequest | SkipReason | list``.

    Args:
        name: The trigger's name (the function's name by default).
        interval_seconds: Evaluate it every this many seconds in the daemon (while enabled);
            None evaluates it only on demand.
        timeout_seconds: An evaluation running longer is recorded FAILED.
        description: Shown in the UI (the function's docstring by default).
        team: The team its backfills act for (fair share, team limits); None: the team of
            the token or person that evaluates it.
    """
    if interval_seconds is not None and (
        isinstance(interval_seconds, bool) or interval_seconds < MIN_INTERVAL_SECONDS
    ):
        raise ValueError(f"interval_seconds must be at least {MIN_INTERVAL_SECONDS}")
    if timeout_seconds <= 0:
        raise ValueError("timeout_seconds must be positive")
    if team is not None and (not isinstance(team, str) or not 0 < len(team) <= 200):
        raise ValueError("team must be a name of 1 to 200 characters")

    def decorate(function: TriggerFunction) -> TriggerDefinition:
        trigger_name = name or str(getattr(function, "__name__", ""))
        if not TRIGGER_NAME.match(trigger_name):
            raise ValueError(f"invalid trigger name {trigger_name!r}")
        doc = description
        if doc is None:
            doc = (getattr(function, "__doc__", None) or "").strip() or None
        return TriggerDefinition(
            name=trigger_name,
            fn=function,
            interval_seconds=float(interval_seconds) if interval_seconds is not None else None,
            timeout_seconds=float(timeout_seconds),
            description=doc,
            team=team,
        )

    if fn is not None:
        return decorate(fn)
    return decorate


__all__ = [
    "PartitionStatuses",
    "PreviousEvaluation",
    "SkipReason",
    "TriggerContext",
    "TriggerDefinition",
    "TriggerResult",
    "trigger",
]
