"""Numbered window starts (the axis of a time partitions definition) and their key space."""

from __future__ import annotations

import abc
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from zoneinfo import ZoneInfo

from backfiller.definitions.partitions._formats import _SUFFIX_RE, _numeric_format, _strptime
from backfiller.definitions.partitions._instants import (
    _DAY,
    _MAX_YEAR,
    _MIN_YEAR,
    _format_offset,
    _localize,
    _wall_exists,
)


@dataclass(frozen=True, slots=True)
class Bounds:
    """The windows of a key space: periods ``[first, stop)``, starting at the instants
    ``[lo, hi)`` (window starts grow with the period)."""

    lo: int
    hi: int
    first: int
    stop: int

    def index(self, period: int | None) -> int | None:
        """The index of ``period`` in the space, or None outside it."""
        if period is None or not self.first <= period < self.stop:
            return None
        return period - self.first


class _Axis(abc.ABC):
    """Numbered window starts of a time partitions definition."""

    def __init__(self, tz: ZoneInfo, fmt: str) -> None:
        self.tz = tz
        self.fmt = fmt
        self.numeric = _numeric_format(fmt)

    @abc.abstractmethod
    def first_period(self) -> int:
        """The period of the first window starting at or after the start bound."""

    @abc.abstractmethod
    def end_period(self, bound: int) -> int:
        """One past the last period whose window ends at or before instant ``bound``."""

    @abc.abstractmethod
    def start(self, period: int) -> int:
        """Instant at which the window of ``period`` starts."""

    @abc.abstractmethod
    def key(self, period: int) -> str:
        """Key of ``period``."""

    @abc.abstractmethod
    def parse(self, key: str) -> int | str:
        """Window start instant named by ``key``, or a message when it is malformed."""

    @abc.abstractmethod
    def period_at(self, x: int) -> int | None:
        """Period starting at instant ``x`` (within generated range), or None."""

    def period_of_key(self, key: str, lo: int, hi: int) -> int | None:
        """Period whose window ``key`` names, or None when it names none (or is malformed).

        ``[lo, hi)`` are window starts (instants) outside which the answer is None whatever
        the key: the caller checks the period it gets against its own bounds too, and these
        only stop a key far away from making a cron or hourly axis generate up to it. The
        same answer as ``period_at(parse(key))`` within them; subclasses answer the common
        keys without the zone arithmetic (a launch with a list of keys asks once per key).
        """
        x = self.parse(key)
        if isinstance(x, str) or not lo <= x < hi:
            return None
        return self.period_at(x)

    def indexes_of_keys(self, keys: Sequence[str], bounds: Bounds) -> list[int | None]:
        """For each of ``keys`` (strings), in order: its period's index within ``bounds``
        (``period - bounds.first``), or None. Subclasses read a long list of keys in one pass
        (a launch with a list of keys asks once for all of them)."""
        return [bounds.index(self.period_of_key(key, bounds.lo, bounds.hi)) for key in keys]

    def datetime_at(self, x: int) -> datetime:
        # UTC, not the zone: Python compares and subtracts datetimes sharing a tzinfo by wall
        # time, which would make a repeated hour's windows look equal.
        return datetime.fromtimestamp(x, UTC)

    def wall_key(self, x: int) -> str:
        """Key of a window starting at ``x``, named by its local wall time (+ offset on fold)."""
        dt = datetime.fromtimestamp(x, self.tz)
        text = dt.replace(tzinfo=None, fold=0).strftime(self.fmt)
        if dt.fold:
            off = dt.utcoffset()
            assert off is not None
            text += _format_offset(off.days * _DAY + off.seconds)
        return text

    def parse_wall(self, key: str) -> tuple[datetime, int, bool] | str:
        """Return ``(wall, instant, suffixed)`` of a key in the wall-time scheme, or a message."""
        suffixed = False
        try:
            wall = _strptime(key, self.fmt)
        except ValueError:
            m = _SUFFIX_RE.search(key)
            if m is None:
                return f"{key!r} does not match the key format {self.fmt!r}"
            try:
                wall = _strptime(key[: m.start()], self.fmt)
            except ValueError:
                return f"{key!r} does not match the key format {self.fmt!r}"
            suffixed = True
        if not _MIN_YEAR <= wall.year <= _MAX_YEAR:
            return f"{key!r} is outside the supported years {_MIN_YEAR}-{_MAX_YEAR}"
        if not _wall_exists(wall, self.tz):
            return f"{key!r} does not exist in {self.tz.key} (skipped by a clock change)"
        x = _localize(wall, self.tz, fold=1 if suffixed else 0)
        canonical = self.wall_key(x)
        if canonical != key:
            if suffixed and _localize(wall, self.tz, fold=0) == x:
                return f"{key!r}: a UTC offset suffix is only used for a repeated local time"
            return f"{key!r} is not a canonical key (expected {canonical!r})"
        return wall, x, suffixed


class _TimeKeySpace:
    """Windows ``[lo, hi)`` of an axis."""

    def __init__(self, axis: _Axis, lo: int, hi: int) -> None:
        self._axis = axis
        self._lo = lo
        self._hi = max(lo, hi)
        while self._hi > self._lo:
            try:
                axis.start(self._hi)
                break
            except IndexError:  # a cron space that stops firing
                self._hi -= 1
        self._start_lo = axis.start(self._lo) if self._hi > self._lo else 0
        self._start_hi = axis.start(self._hi) if self._hi > self._lo else self._start_lo

    def __len__(self) -> int:
        return self._hi - self._lo

    def key_at(self, index: int) -> str:
        if not 0 <= index < self._hi - self._lo:
            raise IndexError(f"partition index {index} outside [0, {self._hi - self._lo})")
        return self._axis.key(self._lo + index)

    def _period(self, key: str) -> int | None:
        if not isinstance(key, str) or self._hi == self._lo:
            return None
        # Window starts grow with the period, so [lo, hi) of periods is [start_lo, start_hi)
        # of instants.
        p = self._axis.period_of_key(key, self._start_lo, self._start_hi)
        return p if p is not None and self._lo <= p < self._hi else None

    def index_of(self, key: str) -> int | None:
        # _period inlined: a launch with a list of keys calls this once per key.
        if not isinstance(key, str) or self._hi == self._lo:
            return None
        p = self._axis.period_of_key(key, self._start_lo, self._start_hi)
        return p - self._lo if p is not None and self._lo <= p < self._hi else None

    def indexes_of(self, keys: Sequence[str]) -> list[int | None]:
        if self._hi == self._lo or set(map(type, keys)) - {str}:
            return [self.index_of(key) for key in keys]
        bounds = Bounds(self._start_lo, self._start_hi, self._lo, self._hi)
        return self._axis.indexes_of_keys(keys, bounds)

    def keys(self, start: int, stop: int) -> list[str]:
        n = self._hi - self._lo
        a, b = min(max(start, 0), n), min(max(stop, 0), n)
        return [self._axis.key(self._lo + i) for i in range(a, b)]

    def window(self, key: str) -> tuple[datetime, datetime] | None:
        p = self._period(key)
        if p is None:
            return None
        return self._axis.datetime_at(self._axis.start(p)), self._axis.datetime_at(
            self._axis.start(p + 1)
        )

    def __repr__(self) -> str:
        return f"_TimeKeySpace(len={len(self)})"
