"""The public time partitions definitions: hourly, daily, weekly, monthly and cron."""

from __future__ import annotations

import abc
import math
from collections.abc import Sequence
from datetime import date, datetime

from croniter import croniter

from backfiller.definitions.partitions._axis import _Axis, _TimeKeySpace
from backfiller.definitions.partitions._calendar import _DailyAxis, _MonthlyAxis, _WeeklyAxis
from backfiller.definitions.partitions._cron import _cron_fields, _CronAxis
from backfiller.definitions.partitions._definition import (
    KeySpace,
    PartitionsDefinition,
    PartitionsDescription,
    PartitionsKind,
    _hash,
)
from backfiller.definitions.partitions._formats import _check_fmt, _sample_days
from backfiller.definitions.partitions._hourly import _HourlyAxis
from backfiller.definitions.partitions._instants import (
    _MAX_INSTANT,
    _MAX_YEAR,
    _MIN_INSTANT,
    _MIN_YEAR,
    _zone,
)

DateLike = str | date | datetime


class _TimeWindowPartitions(PartitionsDefinition):
    """Shared machinery of the time partitions definitions."""

    kind = PartitionsKind.TIME
    cadence: str

    def __init__(
        self,
        start: DateLike,
        end: DateLike | None,
        timezone: str,
        fmt: str,
        end_offset: int,
    ) -> None:
        self.timezone = timezone
        self.tz = _zone(timezone)
        self.fmt = fmt
        _check_fmt(fmt, self._fmt_samples(), type(self).__name__)
        if not isinstance(end_offset, int) or isinstance(end_offset, bool):
            raise ValueError(f"end_offset must be an int, got {end_offset!r}")
        self.end_offset = end_offset
        self.start_bound = self._bound(start, "start")
        self.end_bound = None if end is None else self._bound(end, "end")
        if self.end_bound is not None and self.end_bound <= self.start_bound:
            raise ValueError(f"{type(self).__name__}: end {end!r} must be after start {start!r}")
        self._axis = self._make_axis()
        self._fingerprint: str | None = None

    @abc.abstractmethod
    def _fmt_samples(self) -> list[datetime]: ...

    @abc.abstractmethod
    def _make_axis(self) -> _Axis: ...

    @abc.abstractmethod
    def _cron(self) -> str: ...

    def _extra(self) -> dict[str, object]:
        return {}

    def _bound(self, value: DateLike, name: str) -> int:
        what = f"{type(self).__name__} {name}"
        if isinstance(value, datetime):
            dt = value
        elif isinstance(value, date):
            dt = datetime(value.year, value.month, value.day)
        elif isinstance(value, str):
            try:
                dt = datetime.strptime(value, self.fmt)
            except ValueError:
                try:
                    dt = datetime.fromisoformat(value)
                except ValueError:
                    raise ValueError(
                        f"{what} {value!r} matches neither fmt {self.fmt!r} nor ISO 8601"
                    ) from None
        else:
            raise ValueError(f"{what} must be a str, date or datetime, got {value!r}")
        if dt.tzinfo is None:
            dt = dt.replace(tzinfo=self.tz)
        ts = dt.timestamp()
        x = math.ceil(ts) if name == "start" else math.floor(ts)
        if not _MIN_INSTANT <= x <= _MAX_INSTANT:
            raise ValueError(f"{what} {value!r} is outside the years {_MIN_YEAR}-{_MAX_YEAR}")
        return x

    def key_space(self, now: datetime, dynamic_keys: Sequence[str] = ()) -> KeySpace:
        """Return the windows as of ``now`` (see the module docstring for the bounds).

        Raises:
            ValueError: When ``now`` is naive.
        """
        if not isinstance(now, datetime) or now.tzinfo is None or now.utcoffset() is None:
            raise ValueError(f"now must be an aware datetime, got {now!r}")
        lo = self._axis.first_period()
        if self.end_bound is not None:
            hi = self._axis.end_period(self.end_bound)
        else:
            bound = min(max(math.floor(now.timestamp()), _MIN_INSTANT), _MAX_INSTANT)
            if bound < self.start_bound:
                return _TimeKeySpace(self._axis, lo, lo)
            hi = self._axis.end_period(bound) + self.end_offset
        return _TimeKeySpace(self._axis, lo, hi)

    def _datetime(self, x: int | None) -> datetime | None:
        return None if x is None else datetime.fromtimestamp(x, self.tz)

    def fingerprint(self) -> str:
        if self._fingerprint is None:
            self._fingerprint = self._compute_fingerprint()
        return self._fingerprint

    def _compute_fingerprint(self) -> str:
        return _hash(
            {
                "v": 1,
                "kind": "time",
                "cadence": self.cadence,
                "cron": self._cron(),
                "timezone": self.timezone,
                "fmt": self.fmt,
                "start": self.start_bound,
                "end": self.end_bound,
                "end_offset": self.end_offset,
                **self._extra(),
            }
        )

    def describe(self) -> PartitionsDescription:
        return PartitionsDescription(
            kind=self.kind,
            cadence=self.cadence,
            start=self._datetime(self.start_bound),
            end=self._datetime(self.end_bound),
            timezone=self.timezone,
            fmt=self.fmt,
            cron=self._cron(),
        )

    def validate_key(self, key: str) -> str | None:
        if not isinstance(key, str):
            return f"partition key must be a string, got {key!r}"
        result = self._axis.parse(key)
        return result if isinstance(result, str) else None


class _CalendarPartitions(_TimeWindowPartitions):
    def _fmt_samples(self) -> list[datetime]:
        return [datetime(d.year, d.month, d.day) for d in _sample_days()]


class DailyPartitions(_CalendarPartitions):
    """One partition per local day, keyed by its date.

    Args:
        start: First day (inclusive), as a string in ``fmt`` or ISO 8601, a date or a datetime.
        end: Exclusive end, or None for open-ended (up to the last complete day before now).
        timezone: IANA timezone of the days.
        fmt: ``strftime`` format of the keys; must round-trip a date.
        end_offset: Windows added (or, negative, removed) at the end of an open-ended space.

    Raises:
        ValueError: On a bad timezone, fmt, start or end, or end not after start.
    """

    cadence = "daily"

    def __init__(
        self,
        start: DateLike,
        end: DateLike | None = None,
        timezone: str = "UTC",
        fmt: str = "%Y-%m-%d",
        end_offset: int = 0,
    ) -> None:
        super().__init__(start, end, timezone, fmt, end_offset)

    def _make_axis(self) -> _Axis:
        return _DailyAxis(self.tz, self.fmt, self.start_bound)

    def _cron(self) -> str:
        return "0 0 * * *"


class WeeklyPartitions(_CalendarPartitions):
    """One partition per local week, keyed by the date of its first day.

    Args:
        start: First day (inclusive); rounded up to the next ``day_of_week``.
        end: Exclusive end, or None for open-ended.
        timezone: IANA timezone of the weeks.
        fmt: ``strftime`` format of the keys; must round-trip a date.
        day_of_week: First day of the weeks, 0 = Monday ... 6 = Sunday.
        end_offset: Windows added (or removed) at the end of an open-ended space.

    Raises:
        ValueError: On bad arguments (see DailyPartitions) or ``day_of_week`` outside 0..6.
    """

    cadence = "weekly"

    def __init__(
        self,
        start: DateLike,
        end: DateLike | None = None,
        timezone: str = "UTC",
        fmt: str = "%Y-%m-%d",
        day_of_week: int = 0,
        end_offset: int = 0,
    ) -> None:
        if not isinstance(day_of_week, int) or not 0 <= day_of_week <= 6:
            raise ValueError(f"day_of_week must be 0 (Monday) .. 6 (Sunday), got {day_of_week!r}")
        self.day_of_week = day_of_week
        super().__init__(start, end, timezone, fmt, end_offset)

    def _make_axis(self) -> _Axis:
        return _WeeklyAxis(self.tz, self.fmt, self.start_bound, self.day_of_week)

    def _cron(self) -> str:
        return f"0 0 * * {(self.day_of_week + 1) % 7}"

    def _extra(self) -> dict[str, object]:
        return {"day_of_week": self.day_of_week}


class MonthlyPartitions(_CalendarPartitions):
    """One partition per local month, starting on ``day_of_month``, keyed by that date.

    Args:
        start: First day (inclusive); rounded up to the next ``day_of_month``.
        end: Exclusive end, or None for open-ended.
        timezone: IANA timezone of the months.
        fmt: ``strftime`` format of the keys; must round-trip a date.
        day_of_month: Day on which months start, 1..28 (so that every month has it).
        end_offset: Windows added (or removed) at the end of an open-ended space.

    Raises:
        ValueError: On bad arguments (see DailyPartitions) or ``day_of_month`` outside 1..28.
    """

    cadence = "monthly"

    def __init__(
        self,
        start: DateLike,
        end: DateLike | None = None,
        timezone: str = "UTC",
        fmt: str = "%Y-%m-%d",
        day_of_month: int = 1,
        end_offset: int = 0,
    ) -> None:
        if not isinstance(day_of_month, int) or not 1 <= day_of_month <= 28:
            raise ValueError(f"day_of_month must be 1..28, got {day_of_month!r}")
        self.day_of_month = day_of_month
        super().__init__(start, end, timezone, fmt, end_offset)

    def _make_axis(self) -> _Axis:
        return _MonthlyAxis(self.tz, self.fmt, self.start_bound, self.day_of_month)

    def _cron(self) -> str:
        return f"0 0 {self.day_of_month} * *"

    def _extra(self) -> dict[str, object]:
        return {"day_of_month": self.day_of_month}


class HourlyPartitions(_TimeWindowPartitions):
    """One partition per local hour, keyed by its local start time.

    The second occurrence of a local hour repeated by a fall-back transition is keyed with its
    UTC offset appended (``2024-11-03-01:00-05:00``); hours skipped by spring forward are absent.

    Args:
        start: First hour (inclusive); rounded up to the next local hour start.
        end: Exclusive end, or None for open-ended (up to the last complete hour before now).
        timezone: IANA timezone of the hours.
        fmt: ``strftime`` format of the keys; must round-trip a date and hour.
        end_offset: Windows added (or removed) at the end of an open-ended space.

    Raises:
        ValueError: On a bad timezone, fmt, start or end, or end not after start.
    """

    cadence = "hourly"

    def __init__(
        self,
        start: DateLike,
        end: DateLike | None = None,
        timezone: str = "UTC",
        fmt: str = "%Y-%m-%d-%H:%M",
        end_offset: int = 0,
    ) -> None:
        super().__init__(start, end, timezone, fmt, end_offset)

    def _fmt_samples(self) -> list[datetime]:
        return [datetime(d.year, d.month, d.day, h) for d in _sample_days() for h in (0, 1, 13, 23)]

    def _make_axis(self) -> _Axis:
        return _HourlyAxis(self.tz, self.fmt, self.start_bound)

    def _cron(self) -> str:
        return "0 * * * *"


class TimePartitions(_TimeWindowPartitions):
    """Partitions at the local fire times of a cron expression.

    See the module docstring for DST handling and the enumeration limit
    (``MAX_CRON_WINDOWS``).

    Args:
        cron: A 5-field cron expression (or ``@hourly``, ``@daily``, ``@weekly``, ...).
        start: First fire time considered (inclusive).
        end: Exclusive end, or None for open-ended.
        timezone: IANA timezone in which the expression is evaluated.
        fmt: ``strftime`` format of the keys; must round-trip the fire times.
        end_offset: Windows added (or removed) at the end of an open-ended space.

    Raises:
        ValueError: On a bad expression, timezone, fmt, start or end, or end not after start.
    """

    cadence = "cron"

    def __init__(
        self,
        cron: str,
        start: DateLike,
        end: DateLike | None = None,
        timezone: str = "UTC",
        fmt: str = "%Y-%m-%d-%H:%M",
        end_offset: int = 0,
    ) -> None:
        self.cron = cron
        self._fields = _cron_fields(cron)
        super().__init__(start, end, timezone, fmt, end_offset)
        try:
            self._axis.start(0)
        except IndexError:
            if self.end_bound is None:
                raise ValueError(f"cron {cron!r} never fires after start {start!r}") from None

    def _fmt_samples(self) -> list[datetime]:
        expanded = croniter(" ".join(self._fields)).expanded
        minutes = _CronAxis._ints(expanded[0], 60, self._fields[0])
        hours = _CronAxis._ints(expanded[1], 24, self._fields[1])
        tods = {(hours[0], minutes[0]), (hours[-1], minutes[-1]), (hours[0], minutes[-1])}
        return [
            datetime(d.year, d.month, d.day, h, m) for d in _sample_days() for h, m in sorted(tods)
        ]

    def _make_axis(self) -> _Axis:
        return _CronAxis(self.tz, self.fmt, self.start_bound, self._fields, self.end_bound)

    def _cron(self) -> str:
        return " ".join(self._fields)
