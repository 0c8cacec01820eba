"""Reading a list of keys of a sub-daily time axis in one pass: the layout of their format.

A launch may list thousands of keys; parsing each one with the zone arithmetic of
``_Axis.period_of_key`` costs microseconds. A key of a fixed-width numeric format (``%Y``,
``%m``, ``%d``, ``%H``, ``%M``, ``%S`` and literals, the date fields on one side of the time
fields) is instead read as two slices: its date part, looked up in a cache of the day parts met
so far (day ordinal, or -1 when not a valid date), and its time part, looked up in a table of
the canonical spellings of the times of day at which windows may start. Both tables hold only
canonical spellings, so a key found in both is the canonical key of that wall time; anything
else (a suffixed key, another length, a time that starts no window) takes the axis's full path.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import date, datetime
from zoneinfo import ZoneInfo

from backfiller.definitions.partitions._formats import _fast_pattern
from backfiller.definitions.partitions._instants import (
    _DAY,
    _MAX_YEAR,
    _MIN_YEAR,
    _localize,
    _offset,
)

_DATE_FIELDS = ("year", "month", "day")
_TIME_FIELDS = ("hour", "minute", "second")
_WIDTHS = {"Y": 4, "m": 2, "d": 2, "H": 2, "M": 2, "S": 2}
_NAMES = {"Y": "year", "m": "month", "d": "day", "H": "hour", "M": "minute", "S": "second"}
MAX_CACHED_DAYS = 100_000
"""Day parts remembered per axis; the cache starts over past this."""


def _spans(fmt: str) -> dict[str, tuple[int, int]] | None:
    """Where each field of a fixed-width numeric format sits in a key, or None."""
    spans: dict[str, tuple[int, int]] = {}
    i = position = 0
    while i < len(fmt):
        if fmt[i] == "%":
            width = _WIDTHS[fmt[i + 1]]
            spans[_NAMES[fmt[i + 1]]] = (position, position + width)
            position += width
            i += 2
        else:
            position += 1
            i += 1
    spans["_length"] = (position, position)
    return spans


@dataclass
class WallKeys:
    """The layout of a key format and its caches (see the module docstring).

    ``times`` maps the time part of a key to a value chosen by the axis (its position within
    the day's windows, say); ``days`` the date part to its day's ordinal (-1: not a date).
    """

    fmt: str
    length: int
    date_part: slice
    time_part: slice
    times: dict[str, int]
    days: dict[str, int] = field(default_factory=dict)

    @classmethod
    def of(cls, fmt: str, times_of_day: Iterable[tuple[int, int, int, int]]) -> WallKeys | None:
        """The layout of ``fmt`` with the times ``(hour, minute, second, value)``, or None
        when the format is not fixed-width numeric with its date and time fields apart."""
        if _fast_pattern(fmt) is None:
            return None
        spans = _spans(fmt)
        assert spans is not None
        length = spans.pop("_length")[0]
        dates = [spans[f] for f in _DATE_FIELDS]
        times = [spans[f] for f in _TIME_FIELDS if f in spans]
        if not times or max(end for _, end in dates) <= min(start for start, _ in times):
            cut = max(end for _, end in dates)
            date_part, time_part = slice(0, cut), slice(cut, length)
        elif max(end for _, end in times) <= min(start for start, _ in dates):
            cut = max(end for _, end in times)
            date_part, time_part = slice(cut, length), slice(0, cut)
        else:
            return None
        table = {
            datetime(2000, 1, 1, h, m, s).strftime(fmt)[time_part]: value
            for h, m, s, value in times_of_day
        }
        return cls(fmt, length, date_part, time_part, table)

    def day(self, part: str) -> int:
        """The ordinal of the day a date part names (cached), or -1 when it names none."""
        found = self.days.get(part)
        if found is not None:
            return found
        ordinal = self._read_day(part)
        if len(self.days) >= MAX_CACHED_DAYS:
            self.days = {}
        self.days[part] = ordinal
        return ordinal

    def _read_day(self, part: str) -> int:
        sample = datetime(2000, 1, 1).strftime(self.fmt)
        s = self.date_part
        key = sample[: s.start] + part + sample[s.stop :]
        pattern = _fast_pattern(self.fmt)
        assert pattern is not None
        m = pattern[0].fullmatch(key) if len(key) == self.length else None
        if m is None:
            return -1
        values = dict(zip(pattern[1], map(int, m.groups()), strict=True))
        if not _MIN_YEAR <= values["year"] <= _MAX_YEAR:
            return -1
        try:
            return date(values["year"], values["month"], values["day"]).toordinal()
        except ValueError:
            return -1


def regular_day(day: date, tz: ZoneInfo) -> int | None:
    """The instant of ``day``'s local midnight when no clock change happens within the day
    (its midnight exists once, and its UTC offset is the same at its first and last second:
    clock changes are never less than a day apart in the tz database), else None."""
    midnight = datetime(day.year, day.month, day.day)
    x = _localize(midnight, tz)
    if _localize(midnight, tz, fold=1) != x:
        return None  # a repeated midnight
    offset = _offset(tz, x)
    if datetime.fromtimestamp(x, tz).replace(tzinfo=None) != midnight:
        return None  # a skipped midnight
    end = x + _DAY
    if _offset(tz, end - 1) != offset:
        return None
    return x
