"""Triggers: user functions that decide whether to launch backfills.

A trigger is evaluated on a button (UI, CLI, ``evaluateTrigger``), by the daemon on an
interval or on a cron schedule in a time zone (:mod:`backfiller.definitions.schedules`), or
from a running job through the client. It returns a :class:`BackfillRequest`, a
list of them, or a :class:`SkipReason`; the service launches what it returns through the same
path as ``launchBackfill`` and records every evaluation with its outcome.

Example:
    >>> @trigger(interval_seconds=3600, description="Rebuild days whose input landed")
    ... def landed_days(context: TriggerContext) -> BackfillRequest | SkipReason:
    ...     missing = context.partition_statuses("daily_sales").never_ran
    ...     if not missing:
    ...         return SkipReason("every day already ran")
    ...     return BackfillRequest(job="daily_sales", partitions=PartitionKeys(missing))

    >>> @trigger(cron="0 3 * * *", timezone="Europe/Berlin")
    ... def yesterday(context: TriggerContext) -> BackfillRequest:
    ...     day = context.scheduled_local_time.date() - timedelta(days=1)
    ...     return BackfillRequest(job="daily_sales", partitions=PartitionKeys([str(day)]))
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Literal, Protocol, TypeAlias, overload

from backfiller.definitions.requests import BackfillRequest
from backfiller.definitions.schedules import (
    CatchUp,
    CronSchedule,
    ScheduleError,
    parse_catch_up,
    parse_zone,
)

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

PartitionRunStatus = Literal[
    "SUCCEEDED", "FAILED", "QUEUED", "RUNNING", "CANCELED", "SKIPPED", "NEVER_RAN"
]


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
        scheduled_time: The tick this evaluation stands for (aware, UTC) when the daemon
            evaluates it on its schedule: for a cron trigger the cron time (a tick caught up
            after a gap keeps its own time), for an interval trigger the time it was due.
            None when evaluated on demand or from a job.
        timezone: The trigger's time zone (``UTC`` unless a cron trigger names one).
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
        scheduled_time: datetime | None = None,
        timezone: str = "UTC",
    ) -> None:
        self.trigger_name = trigger_name
        self.now = now
        self.scheduled_time = scheduled_time
        self.timezone = timezone
        self.cursor = cursor
        self.previous_evaluations = tuple(previous_evaluations)
        self.dry_run = dry_run
        self.log = log or logging.getLogger(f"backfiller.trigger.{trigger_name}")
        self._partition_reader = partition_reader
        self._client_factory = client_factory
        self._client: Client | None = None

    @property
    def scheduled_local_time(self) -> datetime:
        """The scheduled time (or, on demand, the evaluation's time) in the trigger's zone:
        ``context.scheduled_local_time.date()`` is the day the tick stands for."""
        return (self.scheduled_time or self.now).astimezone(parse_zone(self.timezone))

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
    schedule: CronSchedule | None = None
    catch_up: CatchUp = CatchUp.LATEST
    team: str | None = None
    """The team its launches act for; None: the team of whoever evaluates it (none for the
    daemon's evaluations)."""

    @property
    def cron(self) -> str | None:
        """The cron expression the daemon evaluates it on, if any."""
        return self.schedule.expression if self.schedule is not None else None

    @property
    def timezone(self) -> str | None:
        """The time zone of its cron expression (None without one)."""
        return self.schedule.timezone if self.schedule is not None else None

    @property
    def scheduled(self) -> bool:
        """Whether the daemon evaluates it by itself (an interval or a cron schedule)."""
        return self.interval_seconds is not None or self.schedule is not None

    def __call__(self, context: TriggerContext) -> TriggerResult:
        return self.fn(context)


@overload
def trigger(fn: TriggerFunction, /) -> TriggerDefinition: ...


@overload
def trigger(
    *,
    name: str | None = None,
    interval_seconds: float | None = None,
    cron: str | None = None,
    timezone: str | None = None,
    catch_up: Literal["latest", "all", "none"] = "latest",
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
    cron: str | None = None,
    timezone: str | None = None,
    catch_up: Literal["latest", "all", "none"] = "latest",
    timeout_seconds: float = DEFAULT_TIMEOUT_SECONDS,
    description: str | None = None,
    team: str | None = None,
) -> TriggerDefinition | Callable[[TriggerFunction], TriggerDefinition]:
    """Declare a trigger over a function ``(context) -> BackfillRequest | SkipReason | list``.

    Args:
        name: The trigger's name (the function's name by default).
        interval_seconds: Evaluate it every this many seconds in the daemon (while enabled);
            None (and no ``cron``) evaluates it only on demand.
        cron: Evaluate it in the daemon at the times matching this 5-field cron expression
            (``"0 3 * * *"``, ``@daily``) on the wall clock of ``timezone``; not with
            ``interval_seconds``. Each matching wall-clock time fires once across clock
            changes (see :mod:`backfiller.definitions.schedules`).
        timezone: The IANA zone of ``cron`` (default ``UTC``).
        catch_up: What to do with the ticks missed while no daemon ran: ``"latest"``
            evaluate once, for the latest; ``"all"`` evaluate each in order (at most
            ``MAX_CATCH_UP``, the latest ones); ``"none"`` skip them.
        timeout_seconds: An evaluation running longer is recorded FAILED.
        description: Shown in the UI (the function's docstring by default).
        team: The team its backfills act for (None: the evaluating token's or person's).

    Raises:
        ScheduleError: (a ValueError) an invalid cron expression, time zone or catch-up
            policy, or ``cron`` with ``interval_seconds``; raised when the definitions load.
    """
    schedule = _schedule_of(interval_seconds, cron, timezone)
    policy = parse_catch_up(catch_up)
    _check_limits(interval_seconds, timeout_seconds, team)

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
            schedule=schedule,
            catch_up=policy,
            team=team,
        )

    if fn is not None:
        return decorate(fn)
    return decorate


def _check_limits(interval_seconds: float | None, timeout_seconds: float, team: str | None) -> None:
    if interval_seconds is not None and (
        isinstance(interval_seconds, bool) or interval_seconds < MIN_INTERVAL_SECONDS
    ):
        raise ValueError(f"interval_seconds must be at least {MIN_INTERVAL_SECONDS}")
    if timeout_seconds <= 0:
        raise ValueError("timeout_seconds must be positive")
    if team is not None and (not isinstance(team, str) or not 0 < len(team) <= 200):
        raise ValueError("team must be a name of 1 to 200 characters")


def _schedule_of(
    interval_seconds: float | None, cron: str | None, timezone: str | None
) -> CronSchedule | None:
    if cron is None:
        if timezone is not None:
            raise ScheduleError("timezone is the zone of a cron expression: give cron too")
        return None
    if interval_seconds is not None:
        raise ScheduleError("give a trigger interval_seconds or cron, not both")
    return CronSchedule.of(cron, "UTC" if timezone is None else timezone)


__all__ = [
    "PartitionStatuses",
    "PreviousEvaluation",
    "SkipReason",
    "TriggerContext",
    "TriggerDefinition",
    "TriggerResult",
    "trigger",
]
