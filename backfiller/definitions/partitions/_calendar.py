"""Daily, weekly and monthly windows: numbered by the calendar, O(1)."""

from __future__ import annotations

import abc
from collections.abc import Sequence
from datetime import date, datetime
from zoneinfo import ZoneInfo

from backfiller.definitions.partitions._axis import Bounds, _Axis
from backfiller.definitions.partitions._formats import _strptime
from backfiller.definitions.partitions._instants import _MAX_YEAR, _MIN_YEAR, _localize


class _CalendarAxis(_Axis):
    """Daily, weekly or monthly windows, numbered by absolute calendar periods (O(1))."""

    def __init__(self, tz: ZoneInfo, fmt: str, start_bound: int) -> None:
        super().__init__(tz, fmt)
        self.start_bound = start_bound
        self.iso = fmt == "%Y-%m-%d"

    @abc.abstractmethod
    def day_of(self, period: int) -> date: ...

    @abc.abstractmethod
    def period_of_day(self, day: date) -> int:
        """The period whose first day is the latest at or before ``day``."""

    @abc.abstractmethod
    def misalignment(self, day: date) -> str | None: ...

    def start(self, period: int) -> int:
        d = self.day_of(period)
        return _localize(datetime(d.year, d.month, d.day), self.tz)

    def key(self, period: int) -> str:
        d = self.day_of(period)
        return datetime(d.year, d.month, d.day).strftime(self.fmt)

    def floor(self, x: int) -> int:
        """The last period starting at or before instant ``x``."""
        p = self.period_of_day(datetime.fromtimestamp(x, self.tz).date())
        while self.start(p + 1) <= x:
            p += 1
        while self.start(p) > x:
            p -= 1
        return p

    def first_period(self) -> int:
        p = self.floor(self.start_bound)
        return p if self.start(p) >= self.start_bound else p + 1

    def end_period(self, bound: int) -> int:
        return self.floor(bound)

    def parse(self, key: str) -> int | str:
        try:
            wall = _strptime(key, self.fmt)
        except ValueError:
            return f"{key!r} does not match the key format {self.fmt!r}"
        if wall.time() != datetime.min.time():
            return f"{key!r} is not at midnight"
        if not _MIN_YEAR <= wall.year <= _MAX_YEAR:
            return f"{key!r} is outside the supported years {_MIN_YEAR}-{_MAX_YEAR}"
        problem = self.misalignment(wall.date())
        if problem is not None:
            return f"{key!r} {problem}"
        canonical = wall.strftime(self.fmt)
        if canonical != key:
            return f"{key!r} is not a canonical key (expected {canonical!r})"
        return self.start(self.period_of_day(wall.date()))

    def period_at(self, x: int) -> int | None:
        p = self.floor(x)
        return p if self.start(p) == x else None

    def period_of_key(self, key: str, lo: int, hi: int) -> int | None:
        # Periods are numbered by the calendar, so a key's period follows from its date alone:
        # no zone arithmetic. Window starts grow with the period, so "the window starting at
        # the key's instant" is this period whenever the key is canonical and aligned.
        if self.iso:
            # The default format: the C parser, and a canonical key is what it reads back to.
            try:
                day = date.fromisoformat(key)
            except ValueError:
                return super().period_of_key(key, lo, hi)
            if day.isoformat() == key:
                if not _MIN_YEAR <= day.year <= _MAX_YEAR or self.misalignment(day):
                    return None
                return self.period_of_day(day)
            return super().period_of_key(key, lo, hi)
        numeric = self.numeric
        m = None if numeric is None else numeric.pattern.fullmatch(key)
        if m is None:
            return super().period_of_key(key, lo, hi)  # a non-numeric format, or no match
        # Read inline rather than with numeric.read: this runs once per key of a key list.
        assert numeric is not None
        g = m.groups()
        for i in numeric.time_groups:
            if g[i] != "00":
                return None
        year = int(g[numeric.year])
        if not _MIN_YEAR <= year <= _MAX_YEAR:
            return None
        try:
            day = date(year, int(g[numeric.month]), int(g[numeric.day]))
        except ValueError:
            return None
        if self.misalignment(day) is not None:
            return None
        return self.period_of_day(day)

    def indexes_of_keys(self, keys: Sequence[str], bounds: Bounds) -> list[int | None]:
        if not self.iso:
            return super().indexes_of_keys(keys, bounds)
        # period_of_key's ISO path, inlined: a 10-character key with dashes at 4 and 7 that
        # the C parser reads is the canonical spelling of its date (its only such format).
        read, first, stop = date.fromisoformat, bounds.first, bounds.stop
        # The period of a day, inlined for each cadence (see period_of_day and misalignment).
        weekly, monthly = isinstance(self, _WeeklyAxis), isinstance(self, _MonthlyAxis)
        anchor = self.anchor if isinstance(self, _WeeklyAxis) else 0
        day_of_month = self.day_of_month if isinstance(self, _MonthlyAxis) else 0
        out: list[int | None] = []
        for key in keys:
            if len(key) == 10 and key[4] == "-" == key[7]:
                try:
                    day = read(key)
                except ValueError:
                    out.append(bounds.index(self.period_of_key(key, bounds.lo, bounds.hi)))
                    continue
                if not _MIN_YEAR <= day.year <= _MAX_YEAR:
                    out.append(None)
                    continue
                if weekly:
                    period, shift = divmod(day.toordinal() - anchor, 7)
                    if shift:
                        out.append(None)
                        continue
                elif monthly:
                    if day.day != day_of_month:
                        out.append(None)
                        continue
                    period = day.year * 12 + day.month - 1
                else:
                    period = day.toordinal()
                out.append(period - first if first <= period < stop else None)
            else:
                out.append(bounds.index(self.period_of_key(key, bounds.lo, bounds.hi)))
        return out


class _DailyAxis(_CalendarAxis):
    def day_of(self, period: int) -> date:
        return date.fromordinal(period)

    def period_of_day(self, day: date) -> int:
        return day.toordinal()

    def misalignment(self, day: date) -> str | None:
        return None


class _WeeklyAxis(_CalendarAxis):
    def __init__(self, tz: ZoneInfo, fmt: str, start_bound: int, day_of_week: int) -> None:
        super().__init__(tz, fmt, start_bound)
        self.day_of_week = day_of_week
        # date.fromordinal(1) (0001-01-01) is a Monday.
        self.anchor = 1 + day_of_week

    def day_of(self, period: int) -> date:
        return date.fromordinal(self.anchor + 7 * period)

    def period_of_day(self, day: date) -> int:
        return (day.toordinal() - self.anchor) // 7

    def misalignment(self, day: date) -> str | None:
        if day.weekday() != self.day_of_week:
            return f"is a {day.strftime('%A')}, not a {_WEEKDAYS[self.day_of_week]}"
        return None


class _MonthlyAxis(_CalendarAxis):
    def __init__(self, tz: ZoneInfo, fmt: str, start_bound: int, day_of_month: int) -> None:
        super().__init__(tz, fmt, start_bound)
        self.day_of_month = day_of_month

    def day_of(self, period: int) -> date:
        year, month0 = divmod(period, 12)
        return date(year, month0 + 1, self.day_of_month)

    def period_of_day(self, day: date) -> int:
        p = day.year * 12 + day.month - 1
        return p - 1 if day.day < self.day_of_month else p

    def misalignment(self, day: date) -> str | None:
        if day.day != self.day_of_month:
            return f"is not on day {self.day_of_month} of its month"
        return None


_WEEKDAYS = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday")
