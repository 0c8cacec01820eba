"""Cron windows: fire times of a cron expression, enumerated lazily and cached."""

from __future__ import annotations

import bisect
import threading
from collections.abc import Sequence
from datetime import date, datetime, timedelta
from zoneinfo import ZoneInfo

from croniter import croniter

from backfiller.definitions.partitions._axis import Bounds, _Axis
from backfiller.definitions.partitions._instants import (
    _DAY,
    _EPOCH_ORDINAL,
    _MAX_YEAR,
    _localize,
    _offset,
    _wall_exists,
)
from backfiller.definitions.partitions._wallkeys import WallKeys

MAX_CRON_WINDOWS = 1_000_000
"""Largest number of windows a cron (``TimePartitions``) space may enumerate."""

_CRON_ALIASES = {
    "@yearly": "0 0 1 1 *",
    "@annually": "0 0 1 1 *",
    "@monthly": "0 0 1 * *",
    "@weekly": "0 0 * * 0",
    "@daily": "0 0 * * *",
    "@midnight": "0 0 * * *",
    "@hourly": "0 * * * *",
}


def _cron_fields(expr: str) -> list[str]:
    if not isinstance(expr, str) or not expr.strip():
        raise ValueError("cron must be a non-empty cron expression")
    text = _CRON_ALIASES.get(expr.strip().lower(), expr.strip())
    fields = text.split()
    if len(fields) != 5:
        raise ValueError(
            f"cron {expr!r} must have 5 fields (minute hour day-of-month month day-of-week)"
        )
    try:
        croniter(text)
    except (ValueError, KeyError) as exc:
        raise ValueError(f"invalid cron expression {expr!r}: {exc}") from exc
    return fields


class _CronAxis(_Axis):
    """Windows at cron fire times, enumerated lazily and cached."""

    def __init__(
        self, tz: ZoneInfo, fmt: str, origin: int, fields: list[str], end_bound: int | None
    ) -> None:
        super().__init__(tz, fmt)
        self.origin = origin
        self.end_bound = end_bound
        expanded = croniter(" ".join(fields)).expanded
        minutes = self._ints(expanded[0], 60, fields[0])
        hours = self._ints(expanded[1], 24, fields[1])
        self.every_hour = len(hours) == 24
        self.times = [(h, m) for h in hours for m in minutes]
        self.day_expr = " ".join(["0", "0", *fields[2:]])
        first_day = datetime.fromtimestamp(origin, tz).date() - timedelta(days=2)
        self.days = croniter(
            self.day_expr, datetime(first_day.year, first_day.month, first_day.day)
        )
        self.starts: list[int] = []
        self.exhausted = False
        self.lock = threading.Lock()
        # For key lists: the layout of the keys (a fire time read as its place in the day),
        # and for each day generated whose windows are its fire times at one UTC offset, the
        # period of its first window.
        self.seconds = [h * 3600 + m * 60 for h, m in self.times]
        self.wall_keys = WallKeys.of(fmt, [(h, m, 0, i) for i, (h, m) in enumerate(self.times)])
        self.regular_days: dict[int, int] = {}

    @staticmethod
    def _ints(values: list[object], n: int, field: str) -> list[int]:
        if values == ["*"]:
            return list(range(n))
        out = sorted({int(str(v)) for v in values})
        if not out or out[0] < 0 or out[-1] >= n:
            raise ValueError(f"unsupported cron field {field!r}")
        return out

    def _next_day(self) -> date | None:
        try:
            nxt = self.days.get_next(datetime)
        except (ValueError, OverflowError):
            return None
        assert isinstance(nxt, datetime)
        return None if nxt.year > _MAX_YEAR else nxt.date()

    def _generate_until(self, x: int | None, count: int | None) -> None:
        """Generate starts until one is > ``x`` or there are > ``count`` of them."""

        def done() -> bool:
            if self.exhausted:
                return True
            if x is not None and self.starts and self.starts[-1] > x:
                return True
            return count is not None and len(self.starts) > count

        if done():
            return
        with self.lock:
            while not done():
                day = self._next_day()
                if day is None:
                    self.exhausted = True
                    break
                batch: set[int] = set()
                for h, m in self.times:
                    wall = datetime(day.year, day.month, day.day, h, m)
                    x0 = _localize(wall, self.tz)
                    if _wall_exists(wall, self.tz):
                        batch.add(x0)
                        x1 = _localize(wall, self.tz, fold=1)
                        if x1 != x0 and self.every_hour:
                            batch.add(x1)
                    elif not self.every_hour:
                        batch.add(x0)
                last = self.starts[-1] if self.starts else self.origin - 1
                first = len(self.starts)
                for y in sorted(batch):
                    if y > last and (self.end_bound is None or y <= self.end_bound):
                        self.starts.append(y)
                        last = y
                self._note_day(day, first)
                if self.end_bound is not None and (
                    last >= self.end_bound or (batch and max(batch) > self.end_bound)
                ):
                    self.exhausted = True
                if len(self.starts) > MAX_CRON_WINDOWS + 1:
                    raise ValueError(
                        f"cron partitions are limited to {MAX_CRON_WINDOWS} windows; "
                        "use a later start, an end, or a coarser cadence"
                    )
                if day.year >= _MAX_YEAR:
                    self.exhausted = True

    def first_period(self) -> int:
        return 0

    def end_period(self, bound: int) -> int:
        self._generate_until(bound, None)
        return max(0, bisect.bisect_right(self.starts, bound) - 1)

    def start(self, period: int) -> int:
        self._generate_until(None, period)
        if not 0 <= period < len(self.starts):
            raise IndexError(period)
        return self.starts[period]

    def key(self, period: int) -> str:
        return self.wall_key(self.start(period))

    def parse(self, key: str) -> int | str:
        parsed = self.parse_wall(key)
        return parsed if isinstance(parsed, str) else parsed[1]

    def period_at(self, x: int) -> int | None:
        self._generate_until(x, None)
        p = bisect.bisect_left(self.starts, x)
        return p if p < len(self.starts) and self.starts[p] == x else None

    def _note_day(self, day: date, first: int) -> None:
        """Remember ``day`` if its windows (from period ``first`` on) are its fire times, all
        at one UTC offset: then a key of it is read without zone arithmetic."""
        added = self.starts[first:]
        if len(added) != len(self.seconds):
            return
        local = (day.toordinal() - _EPOCH_ORDINAL) * _DAY
        offset = local + self.seconds[0] - added[0]
        # The zone's own offset at the day's first and last window: the same, and that one,
        # means no clock change between them (changes are days apart), so every fire time is
        # its wall time, once (not a time skipped and fired after the jump, keyed otherwise).
        if _offset(self.tz, added[0]) != offset or _offset(self.tz, added[-1]) != offset:
            return
        if all(x == local + t - offset for x, t in zip(added, self.seconds, strict=True)):
            self.regular_days[day.toordinal()] = first

    def indexes_of_keys(self, keys: Sequence[str], bounds: Bounds) -> list[int | None]:
        # A remembered day's windows are its fire times in order: a key's period is the day's
        # first plus the place of its time in the day (see _note_day).
        wall = self.wall_keys
        if wall is None:
            return super().indexes_of_keys(keys, bounds)
        length, date_part, time_part = wall.length, wall.date_part, wall.time_part
        places, first, stop, last = wall.times.get, bounds.first, bounds.stop, len(self.times) - 1
        last_part, base, whole = "", None, False
        out: list[int | None] = []
        for key in keys:
            if len(key) == length:
                place = places(key[time_part])
                if place is not None:
                    part = key[date_part]
                    if part != last_part:
                        last_part, base = part, self._day_base(wall.day(part), bounds)
                        whole = base is not None and first <= base and base + last < stop
                    if whole:
                        out.append(base - first + place)  # type: ignore[operator]
                        continue
                    if base is not None:
                        period = base + place
                        out.append(period - first if first <= period < stop else None)
                        continue
            out.append(bounds.index(self.period_of_key(key, bounds.lo, bounds.hi)))
        return out

    def _day_base(self, ordinal: int, bounds: Bounds) -> int | None:
        """The period of the first window of a remembered day (generating up to the day when
        it is near ``bounds``), else None."""
        if ordinal < 0:
            return None
        found = self.regular_days.get(ordinal)
        if found is None and not self.exhausted:
            local = (ordinal - _EPOCH_ORDINAL) * _DAY
            if bounds.lo - 2 * _DAY <= local < bounds.hi + 2 * _DAY:
                self._generate_until(local + 2 * _DAY, None)
                found = self.regular_days.get(ordinal)
        return found
