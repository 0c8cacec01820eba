"""Hourly windows: O(1) arithmetic between the changes of the UTC offset modulo one hour."""

from __future__ import annotations

import bisect
import functools
import threading
from collections.abc import Sequence
from datetime import UTC, date, datetime
from zoneinfo import ZoneInfo

from backfiller.definitions.partitions._axis import Bounds, _Axis
from backfiller.definitions.partitions._instants import (
    _DAY,
    _EPOCH_ORDINAL,
    _HOUR,
    _MAX_YEAR,
    _MIN_YEAR,
    _PROBE_STEP,
    _ceil_div,
    _offset,
    _residue,
    _utc_year,
)
from backfiller.definitions.partitions._wallkeys import WallKeys, regular_day


@functools.lru_cache(maxsize=16384)
def _residue_changes(tz_key: str, year: int) -> tuple[tuple[int, int], ...]:
    """Instants ``x`` of UTC year ``year`` where the UTC offset modulo one hour changes.

    Returns ``(x, residue from x on)`` pairs, oldest first.
    """
    tz = ZoneInfo(tz_key)
    a = int(datetime(year, 1, 1, tzinfo=UTC).timestamp())
    b = int(datetime(year + 1, 1, 1, tzinfo=UTC).timestamp())
    out: list[tuple[int, int]] = []
    lo = a - 1
    r_lo = _residue(tz, lo)
    probe = lo
    while probe < b - 1:
        probe = min(probe + _PROBE_STEP, b - 1)
        r_probe = _residue(tz, probe)
        while r_probe != r_lo:
            # Find the first second after lo whose residue differs from r_lo.
            left, right = lo, probe
            while right - left > 1:
                mid = (left + right) // 2
                if _residue(tz, mid) == r_lo:
                    left = mid
                else:
                    right = mid
            r_new = _residue(tz, right)
            out.append((right, r_new))
            lo, r_lo = right, r_new
        lo, r_lo = probe, r_probe
    return tuple(out)


class _HourlyAxis(_Axis):
    """Windows at every local top-of-hour instant, numbered from the start bound.

    Between residue changes (instants where the UTC offset modulo one hour changes) the window
    starts are the instants ``x`` with ``(x + residue) % 3600 == 0``, so counting is arithmetic;
    the changes (``xs``/``rs``) and the number of windows before each (``cs``) are kept in a
    table covering ``[origin, covered)``, extended a UTC year at a time on demand.
    """

    def __init__(self, tz: ZoneInfo, fmt: str, origin: int) -> None:
        super().__init__(tz, fmt)
        self.origin = origin
        # (change instants, residues from them on, window starts before them); replaced whole.
        self.table: tuple[list[int], list[int], list[int]] = ([origin], [_residue(tz, origin)], [0])
        self.covered_year = _utc_year(origin) - 1
        self.covered = origin
        self.last_offset = _offset(tz, origin)  # a guess for period_of_key
        self.lock = threading.Lock()
        self._extend_to(origin)
        # For key lists: the layout of the keys (HH:00 read as the hour), and per day read so
        # far the period of its midnight window, or None when its keys take the full path (a
        # clock change within the day, or the origin after its midnight).
        self.wall_keys = WallKeys.of(fmt, [(h, 0, 0, h) for h in range(24)])
        self.regular_days: dict[int, int | None] = {}

    def _extend_to(self, x: int) -> None:
        if x < self.covered:
            return
        with self.lock:
            while self.covered <= x:
                year = self.covered_year + 1
                changes = [c for c in _residue_changes(self.tz.key, year) if c[0] > self.origin]
                if changes:
                    xs, rs, cs = (list(v) for v in self.table)
                    for cx, r in changes:
                        if r != rs[-1]:
                            cs.append(cs[-1] + self._count_in(xs[-1], cx, rs[-1]))
                            xs.append(cx)
                            rs.append(r)
                    self.table = (xs, rs, cs)
                self.covered_year = year
                self.covered = int(datetime(year + 1, 1, 1, tzinfo=UTC).timestamp())

    @staticmethod
    def _count_in(a: int, b: int, r: int) -> int:
        """Number of ``y`` in ``[a, b)`` with ``(y + r) % 3600 == 0``."""
        return _ceil_div(b + r, _HOUR) - _ceil_div(a + r, _HOUR)

    def count(self, x: int) -> int:
        """Number of window starts in ``[origin, x)``."""
        if x <= self.origin:
            return 0
        self._extend_to(x)
        xs, rs, cs = self.table
        k = bisect.bisect_right(xs, x) - 1
        return cs[k] + self._count_in(xs[k], x, rs[k])

    def start(self, period: int) -> int:
        if period < 0:
            raise IndexError(period)
        while True:
            covered = self.covered
            xs, rs, cs = self.table
            k = bisect.bisect_right(cs, period) - 1
            a, r = xs[k], rs[k]
            y = a + (-(a + r)) % _HOUR + (period - cs[k]) * _HOUR
            if k + 1 < len(xs) or y < covered:
                return y
            self._extend_to(y)

    def first_period(self) -> int:
        return 0

    def end_period(self, bound: int) -> int:
        return max(0, self.count(bound + 1) - 1)

    def key(self, period: int) -> str:
        return self.wall_key(self.start(period))

    def parse(self, key: str) -> int | str:
        parsed = self.parse_wall(key)
        if isinstance(parsed, str):
            return parsed
        wall, x, _ = parsed
        if (wall.minute, wall.second, wall.microsecond) != (0, 0, 0):
            return f"{key!r} is not at the start of an hour"
        return x

    def period_at(self, x: int) -> int | None:
        if x < self.origin or (x + _offset(self.tz, x)) % _HOUR:
            return None
        return self.count(x)

    def period_of_key(self, key: str, lo: int, hi: int) -> int | None:
        # An unsuffixed key names the first occurrence of its wall time. Guess its instant
        # with the offset of the previous key (keys of a list are mostly near each other),
        # then check the guess with one conversion: a wall time that reads back the same,
        # first occurrence, is the key's window start. Anything else takes the full parse.
        fields = None if self.numeric is None else self.numeric.read(key)
        if fields is None:
            return super().period_of_key(key, lo, hi)  # a suffixed key, a non-numeric format
        year, month, day, hour, minute, second = fields
        if minute or second or not _MIN_YEAR <= year <= _MAX_YEAR:
            return None
        try:
            wall = datetime(year, month, day, hour)
        except ValueError:
            return None
        local = (wall.toordinal() - _EPOCH_ORDINAL) * _DAY + wall.hour * _HOUR
        offset = self.last_offset
        for _ in range(2):
            x = local - offset
            seen = datetime.fromtimestamp(x, self.tz)
            if seen.replace(tzinfo=None) == wall and not seen.fold:
                self.last_offset = offset
                return self.count(x) if lo <= x < hi and x >= self.origin else None
            off = seen.utcoffset()
            assert off is not None
            offset = off.days * _DAY + off.seconds
        return super().period_of_key(key, lo, hi)

    def indexes_of_keys(self, keys: Sequence[str], bounds: Bounds) -> list[int | None]:
        # Within a day without a clock change, the window of HH:00 is the one of the day's
        # midnight plus HH: per key, one lookup of its time and (when its day is not the one
        # of the key before) one of its day; no zone arithmetic.
        wall = self.wall_keys
        if wall is None:
            return super().indexes_of_keys(keys, bounds)
        length, date_part, time_part = wall.length, wall.date_part, wall.time_part
        hours, first, stop = wall.times.get, bounds.first, bounds.stop
        last_part, base, whole = "", None, False
        out: list[int | None] = []
        for key in keys:
            if len(key) == length:
                hour = hours(key[time_part])
                if hour is not None:
                    part = key[date_part]
                    if part != last_part:
                        last_part, base = part, self._day_base(wall.day(part), bounds)
                        whole = base is not None and first <= base and base + 23 < stop
                    if whole:
                        out.append(base - first + hour)  # type: ignore[operator]
                        continue
                    if base is not None:
                        period = base + hour
                        out.append(period - first if first <= period < stop else None)
                        continue
            out.append(bounds.index(self.period_of_key(key, bounds.lo, bounds.hi)))
        return out

    def _day_base(self, ordinal: int, bounds: Bounds) -> int | None:
        """The period of the midnight window of a day without a clock change, at or after the
        origin (remembered), else None. A day far outside ``bounds`` is not looked at, so that
        a stray key does not extend the table to its year."""
        if ordinal < 0:
            return None
        if ordinal in self.regular_days:
            return self.regular_days[ordinal]
        midnight = regular_day(date.fromordinal(ordinal), self.tz)
        if midnight is None or midnight < self.origin:
            found = None
        elif not bounds.lo - _DAY <= midnight < bounds.hi + _DAY:
            return None
        else:
            found = self.count(midnight)
        if len(self.regular_days) >= _MAX_DAYS:
            self.regular_days = {}
        self.regular_days[ordinal] = found
        return found


_MAX_DAYS = 100_000
