"""Cron schedules of triggers: when a ``cron`` trigger fires, in its time zone.

A schedule fires at the local wall-clock times that match a 5-field cron expression (croniter
syntax, ``@daily`` style aliases allowed) in an IANA time zone. Across clock changes every
matching wall-clock time fires exactly once:

* a time that exists twice (the repeated hour when clocks go back) fires at its first
  occurrence only; an hourly or minutely schedule therefore does not fire again while the
  hour repeats;
* a time skipped by a jump forward fires once, at the first instant after the jump (03:00 for
  02:30 when clocks jump from 02:00 to 03:00); several skipped times, or a skipped time and a
  match at the end of the jump, fire once together.

Fire times are therefore strictly increasing instants. They are computed on the wall clock
with croniter and mapped to instants with :mod:`zoneinfo`, so the rule holds for any zone
(Australia/Lord_Howe's half-hour change included).

Example:
    >>> from datetime import UTC, datetime, timedelta
    >>> s = CronSchedule.of("0 3 * * *", "Europe/Berlin")
    >>> [t.isoformat() for t in s.fire_times_after(datetime(2026, 3, 28, tzinfo=UTC), 2)]
    ['2026-03-28T02:00:00+00:00', '2026-03-29T01:00:00+00:00']
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from enum import StrEnum
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from croniter import croniter

MAX_CATCH_UP = 100
"""Most missed ticks a ``catch_up="all"`` trigger evaluates after a gap: the latest ones."""

ON_TIME_SECONDS = 60.0
"""A tick evaluated at most this long after its time is on time; later, it was missed (what
``catch_up="none"`` skips)."""

_ALIASES = {
    "@yearly": "0 0 1 1 *",
    "@annually": "0 0 1 1 *",
    "@monthly": "0 0 1 * *",
    "@weekly": "0 0 * * 0",
    "@daily": "0 0 * * *",
    "@midnight": "0 0 * * *",
    "@hourly": "0 * * * *",
}
_MAX_YEAR = 9000


class CatchUp(StrEnum):
    """What a cron trigger does with the ticks that passed while no daemon evaluated it."""

    LATEST = "latest"
    """Evaluate once, for the latest missed tick (the default)."""
    ALL = "all"
    """Evaluate every missed tick in order, at most :data:`MAX_CATCH_UP` (the latest ones)."""
    NONE = "none"
    """Skip the missed ticks and wait for the next one."""


class ScheduleError(ValueError):
    """A cron expression, time zone or catch-up policy that cannot be used."""


def parse_zone(timezone: str) -> ZoneInfo:
    """The zone of an IANA name (``Europe/Berlin``, ``UTC``).

    Raises:
        ScheduleError: The name is not a known zone.
    """
    if not isinstance(timezone, str) or not timezone.strip():
        raise ScheduleError(f"timezone must be an IANA zone name such as 'UTC', got {timezone!r}")
    try:
        return ZoneInfo(timezone)
    except (ZoneInfoNotFoundError, ValueError) as exc:
        raise ScheduleError(f"unknown timezone {timezone!r} (use an IANA name)") from exc


def parse_cron(expression: str) -> str:
    """The 5-field form of ``expression`` (aliases expanded).

    Raises:
        ScheduleError: It is not a valid 5-field cron expression.
    """
    if not isinstance(expression, str) or not expression.strip():
        raise ScheduleError("cron must be a non-empty cron expression such as '0 3 * * *'")
    text = _ALIASES.get(expression.strip().lower(), expression.strip())
    if len(text.split()) != 5:
        raise ScheduleError(
            f"cron {expression!r} must have 5 fields (minute hour day-of-month month "
            "day-of-week) or be an alias such as @daily"
        )
    try:
        croniter(text, datetime(2000, 1, 1)).get_next(datetime)
    except (ValueError, KeyError, TypeError) as exc:
        raise ScheduleError(f"invalid cron expression {expression!r}: {exc}") from exc
    return text


def parse_catch_up(value: str) -> CatchUp:
    """The policy named ``value``.

    Raises:
        ScheduleError: No such policy.
    """
    try:
        return CatchUp(value)
    except ValueError:
        names = ", ".join(repr(c.value) for c in CatchUp)
        raise ScheduleError(f"catch_up must be one of {names}, got {value!r}") from None


def _instant(wall: datetime, tz: ZoneInfo) -> int:
    """The POSIX second at which the naive ``wall`` time fires in ``tz``: its first occurrence,
    or the first instant after the jump when the clocks skip it."""
    early = int(wall.replace(tzinfo=tz, fold=0).timestamp())
    if datetime.fromtimestamp(early, tz).replace(tzinfo=None) == wall:
        return early
    # Skipped: fold=0 reads it with the offset before the jump (an instant after it), fold=1
    # with the offset after (an instant before it). The jump is the first instant between
    # them whose wall time is later than ``wall``.
    late = int(wall.replace(tzinfo=tz, fold=1).timestamp())
    lo, hi = min(early, late), max(early, late)
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if datetime.fromtimestamp(mid, tz).replace(tzinfo=None) > wall:
            hi = mid
        else:
            lo = mid
    return hi


@dataclass(frozen=True)
class CronSchedule:
    """A cron expression in a time zone (build it with :meth:`of`, which validates)."""

    expression: str
    timezone: str
    _fields: str = field(repr=False, compare=False, default="")
    _zone: ZoneInfo = field(repr=False, compare=False, default=ZoneInfo("UTC"))

    @classmethod
    def of(cls, expression: str, timezone: str = "UTC") -> CronSchedule:
        """Validate and build a schedule.

        Raises:
            ScheduleError: The expression or the zone is invalid.
        """
        fields = parse_cron(expression)
        zone = parse_zone(timezone)
        return cls(expression=expression.strip(), timezone=timezone, _fields=fields, _zone=zone)

    @property
    def key(self) -> str:
        """What identifies the schedule in stored state (a change restarts it from now)."""
        return f"cron {self._fields} {self.timezone}"

    def _fires_after(self, after: datetime) -> Iterator[datetime]:
        """Fire times strictly after ``after`` (aware), in order, without end."""
        at = after.astimezone(UTC)
        last = int(at.timestamp()) - 1
        # Every wall time that fires after ``after`` is later than its local wall time: a
        # wall time at or before it fired at or before ``after`` (first occurrence, or the
        # end of a jump that is already past).
        wall = at.astimezone(self._zone).replace(tzinfo=None)
        walls = croniter(self._fields, wall)
        while True:
            try:
                nxt = walls.get_next(datetime)
            except (ValueError, OverflowError):
                return
            assert isinstance(nxt, datetime)
            if nxt.year > _MAX_YEAR:
                return
            x = _instant(nxt, self._zone)
            if x > last and datetime.fromtimestamp(x, UTC) > at:
                last = x
                yield datetime.fromtimestamp(x, UTC)

    def next_after(self, after: datetime) -> datetime | None:
        """The first fire time strictly after ``after`` (None if it never fires again)."""
        return next(self._fires_after(after), None)

    def fire_times_after(self, after: datetime, count: int) -> list[datetime]:
        """The next ``count`` fire times strictly after ``after``, aware UTC, increasing."""
        out: list[datetime] = []
        if count <= 0:
            return out
        for t in self._fires_after(after):
            out.append(t)
            if len(out) >= count:
                break
        return out

    def ticks_until(
        self, first: datetime, now: datetime, keep: int
    ) -> tuple[list[datetime], int, datetime | None]:
        """The fire times in ``[first, now]`` (``first`` counts when it is one), the latest
        ``keep`` of them; how many there were in all; and the first fire time after ``now``.
        Walks every fire time between: see :meth:`latest_ticks` for long gaps."""
        kept: deque[datetime] = deque(maxlen=max(keep, 1))
        total = 0
        for t in self._fires_after(first - timedelta(seconds=1)):
            if t > now:
                return list(kept), total, t
            kept.append(t)
            total += 1
        return list(kept), total, None

    def latest_ticks(
        self, first: datetime, now: datetime, keep: int
    ) -> tuple[list[datetime], bool, datetime | None]:
        """The latest ``keep`` fire times in ``[first, now]``, whether earlier ones were left
        out, and the first fire time after ``now``.

        Costs about the number of fire times in the latest stretch that holds ``keep`` of
        them (a window growing back from ``now``), not in the whole gap: a minutely schedule
        after a year without a daemon is not walked minute by minute.
        """
        span = timedelta(hours=1)
        while True:
            start = max(first, now - span)
            kept, total, following = self.ticks_until(start, now, keep)
            if start == first or total >= keep:
                left_out = total > len(kept)
                if not left_out and start > first:
                    earlier = self.next_after(first - timedelta(seconds=1))
                    left_out = earlier is not None and earlier < start
                return kept, left_out, following
            span *= 8
