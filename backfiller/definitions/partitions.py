"""Partitions definitions: the set of partition keys of a job.

This module is pure: no IO, no database. It answers questions such as "how many partitions
are there", "what is the 10,000th key", "which index has this key" and "which time window does
this key cover" without ever expanding a whole key list.

Interface (others code against these names)::

    class KeySpace(Protocol):           # an ordered, finite snapshot of keys, oldest first
        def __len__(self) -> int
        def key_at(self, index: int) -> str            # IndexError outside [0, len)
        def index_of(self, key: str) -> int | None     # None when the key is not a partition
        def keys(self, start: int, stop: int) -> list[str]   # slice [start, stop), clamped
        def window(self, key: str) -> tuple[datetime, datetime] | None  # time windows only

    class PartitionsDefinition(abc.ABC):
        kind: PartitionsKind                             # TIME | STATIC | DYNAMIC
        def key_space(self, now: datetime, dynamic_keys: Sequence[str] = ()) -> KeySpace
        def fingerprint(self) -> str                     # stable hash of the definition
        def describe(self) -> PartitionsDescription      # kind, start, end, timezone, cadence, fmt
        def validate_key(self, key: str) -> str | None   # message when malformed (not a key
                                                         # of this format), else None

Concrete: HourlyPartitions, DailyPartitions, WeeklyPartitions, MonthlyPartitions,
TimePartitions(cron=...), StaticPartitions([...]), DynamicPartitions("name").

Time partitions
---------------
* A key names the *start* of its window, formatted with ``fmt`` as a local wall-clock time in the
  definition's timezone. Windows are half-open ``[start, end)`` and contiguous; ``window()``
  returns them as UTC datetimes (use ``astimezone`` for display: Python compares and subtracts
  datetimes that share a tzinfo by wall time, which is wrong across DST).
* ``start`` is inclusive: a string (parsed with ``fmt``, else as ISO 8601), a ``date`` or a
  ``datetime``; naive values are wall-clock times in the definition's timezone. A ``start`` that
  is not on a window boundary is rounded *up* to the next window start.
* ``end`` is exclusive: the space holds the windows that end at or before ``end`` (a ``end``
  between boundaries is rounded *down*). An explicit ``end`` does not depend on ``now``: windows
  in the future are part of the space.
* Open-ended (``end=None``): the space ends with the last *complete* window before ``now`` (its
  end <= ``now``), shifted by ``end_offset`` windows (``end_offset=1`` adds the window in
  progress; negative values drop complete windows).
* Supported years: 1000 to 9998.

Daily, weekly and monthly windows start at local midnight of their first day (23 or 25 hours long
across DST). When local midnight does not exist (e.g. America/Santiago springs forward at 00:00),
the window starts at the transition; the key still names the local date. Index arithmetic works on
the calendar: O(1).

Hourly windows start at every instant whose local wall time is on the hour (``HH:00``):

* spring forward: a local hour that does not exist is simply absent (the previous window is then
  longer, e.g. 90 minutes across Australia/Lord_Howe's 30-minute shift);
* fall back: a repeated local hour gives two windows. The first occurrence has the plain key
  (``2024-11-03-01:00``); the second occurrence gets its UTC offset appended as ``+HH:MM`` /
  ``-HH:MM`` (``2024-11-03-01:00-05:00``). Only that second occurrence carries a suffix, so keys
  stay unique, strictly increasing in time, and round-trip.

Hourly arithmetic is O(1) within stretches where the zone's UTC offset is constant modulo one
hour (all whole-hour DST zones, Asia/Kathmandu after 1986, ...); where that residue changes
(Australia/Lord_Howe, historical local mean time) a small per-definition table of those changes is
binary-searched. The changes are found by probing the zone every three days (results cached per
zone and year), so the first use of a long range costs a few milliseconds; residue excursions
shorter than three days would be missed (none exist in the tz database).

Cron windows (``TimePartitions``) start at the local wall-clock times that match a 5-field cron
expression (croniter syntax, ``@daily`` style aliases allowed). DST rules follow classic cron:

* an expression that fires in every hour (hour field ``*``) follows elapsed time: a repeated hour
  fires twice (second occurrence keyed with the offset suffix, as for hourly), a skipped hour
  does not fire;
* an expression with a restricted hour field fires once per matching wall time: only the first
  occurrence of a repeated time, and a time skipped by spring forward fires right after the jump
  (keyed with the wall time at which it fires), unless that instant is already a window start.

Cron windows are enumerated (not O(1)): starts are generated lazily and cached on the definition
at roughly 1-2 microseconds per window plus about 35 microseconds per matching day. A space is
limited to ``MAX_CRON_WINDOWS`` windows (``ValueError`` beyond). ``validate_key`` for cron only
checks the key format, not that the time matches the expression (``index_of`` does).
"""

from __future__ import annotations

import abc
import bisect
import enum
import functools
import hashlib
import json
import math
import re
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from typing import Protocol, runtime_checkable
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from croniter import croniter

__all__ = [
    "MAX_CRON_WINDOWS",
    "DailyPartitions",
    "DynamicPartitions",
    "HourlyPartitions",
    "KeySpace",
    "MonthlyPartitions",
    "PartitionsDefinition",
    "PartitionsDescription",
    "PartitionsKind",
    "StaticPartitions",
    "TimePartitions",
    "WeeklyPartitions",
]

MAX_CRON_WINDOWS = 1_000_000
"""Largest number of windows a cron (``TimePartitions``) space may enumerate."""

_HOUR = 3600
_DAY = 86400
_MIN_YEAR = 1000
_MAX_YEAR = 9998
_PROBE_STEP = 3 * _DAY
_EPOCH_ORDINAL = date(1970, 1, 1).toordinal()
_MIN_INSTANT = int(datetime(_MIN_YEAR - 1, 12, 30, tzinfo=UTC).timestamp())
_MAX_INSTANT = int(datetime(_MAX_YEAR, 12, 30, tzinfo=UTC).timestamp())
_SUFFIX_RE = re.compile(r"([+-])(\d{2}):(\d{2})(?::(\d{2}))?$")
_CRON_ALIASES = {
    "@yearly": "0 0 1 1 *",
    "@annually": "0 0 1 1 *",
    "@monthly": "0 0 1 * *",
    "@weekly": "0 0 * * 0",
    "@daily": "0 0 * * *",
    "@midnight": "0 0 * * *",
    "@hourly": "0 * * * *",
}


class PartitionsKind(enum.StrEnum):
    """The family a partitions definition belongs to."""

    TIME = "time"
    STATIC = "static"
    DYNAMIC = "dynamic"


@dataclass(frozen=True)
class PartitionsDescription:
    """A plain description of a partitions definition, for display and the API.

    Attributes:
        kind: The family of the definition.
        cadence: ``"hourly"``, ``"daily"``, ``"weekly"``, ``"monthly"`` or ``"cron"`` for time
            partitions, else None.
        start: The (inclusive) start bound as given, aware, in the definition's timezone.
        end: The exclusive end bound, or None when open-ended.
        timezone: IANA timezone name of time partitions.
        fmt: ``strftime`` format of the keys.
        cron: The cron expression (an equivalent one for hourly/daily/weekly/monthly).
        static_keys: The keys of static partitions.
        dynamic_name: The name of the dynamic partitions set.
    """

    kind: PartitionsKind
    cadence: str | None = None
    start: datetime | None = None
    end: datetime | None = None
    timezone: str | None = None
    fmt: str | None = None
    cron: str | None = None
    static_keys: tuple[str, ...] | None = None
    dynamic_name: str | None = None


@runtime_checkable
class KeySpace(Protocol):
    """An ordered, finite snapshot of partition keys, oldest first."""

    def __len__(self) -> int: ...

    def key_at(self, index: int) -> str:
        """Return the key at ``index``; IndexError outside ``[0, len)``."""
        ...

    def index_of(self, key: str) -> int | None:
        """Return the index of ``key``, or None when it is not a partition of this space."""
        ...

    def keys(self, start: int, stop: int) -> list[str]:
        """Return the keys of ``[start, stop)``, both clamped to ``[0, len]``."""
        ...

    def window(self, key: str) -> tuple[datetime, datetime] | None:
        """Return the aware ``[start, end)`` window of ``key``; None for non-time partitions."""
        ...


class PartitionsDefinition(abc.ABC):
    """The set of partition keys of a job or asset.

    Attributes:
        kind: The family of the definition.
    """

    kind: PartitionsKind

    @abc.abstractmethod
    def key_space(self, now: datetime, dynamic_keys: Sequence[str] = ()) -> KeySpace:
        """Return the keys as of ``now`` (aware).

        Args:
            now: The current time; bounds open-ended time partitions.
            dynamic_keys: The stored keys of dynamic partitions, in order (ignored otherwise).
        """

    @abc.abstractmethod
    def fingerprint(self) -> str:
        """Return a short, stable hash of the definition's parameters."""

    @abc.abstractmethod
    def describe(self) -> PartitionsDescription:
        """Return a plain description of the definition."""

    @abc.abstractmethod
    def validate_key(self, key: str) -> str | None:
        """Return a human message when ``key`` is malformed for this definition, else None.

        Membership is not checked here: use ``key_space(...).index_of(key)``.
        """

    def __repr__(self) -> str:
        return f"{type(self).__name__}(fingerprint={self.fingerprint()!r})"


def _hash(payload: dict[str, object]) -> str:
    text = json.dumps(payload, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


# --------------------------------------------------------------------------------------------
# Static and dynamic partitions


class _ListKeySpace:
    """A key space over an explicit list of keys."""

    def __init__(self, keys: tuple[str, ...], index: dict[str, int]) -> None:
        self._keys = keys
        self._index = index

    def __len__(self) -> int:
        return len(self._keys)

    def key_at(self, index: int) -> str:
        if not 0 <= index < len(self._keys):
            raise IndexError(f"partition index {index} outside [0, {len(self._keys)})")
        return self._keys[index]

    def index_of(self, key: str) -> int | None:
        return self._index.get(key)

    def keys(self, start: int, stop: int) -> list[str]:
        n = len(self._keys)
        return list(self._keys[min(max(start, 0), n) : min(max(stop, 0), n)])

    def window(self, key: str) -> tuple[datetime, datetime] | None:
        return None

    def __repr__(self) -> str:
        return f"_ListKeySpace(len={len(self._keys)})"


def _checked_keys(keys: Sequence[str], what: str) -> tuple[tuple[str, ...], dict[str, int]]:
    if isinstance(keys, str | bytes):
        raise ValueError(f"{what} must be a sequence of strings, not a single string")
    out = tuple(keys)
    index: dict[str, int] = {}
    for i, key in enumerate(out):
        if not isinstance(key, str):
            raise ValueError(f"{what}: key at position {i} is not a string: {key!r}")
        if not key:
            raise ValueError(f"{what}: key at position {i} is the empty string")
        if key in index:
            raise ValueError(f"{what}: duplicate key {key!r} (positions {index[key]} and {i})")
        index[key] = i
    return out, index


class StaticPartitions(PartitionsDefinition):
    """A fixed list of keys, in the given order.

    Args:
        keys: The partition keys: non-empty, distinct strings.

    Raises:
        ValueError: On an empty-string key or a duplicate.
    """

    kind = PartitionsKind.STATIC

    def __init__(self, keys: Sequence[str]) -> None:
        self._keys, self._index = _checked_keys(keys, "StaticPartitions")
        self._space = _ListKeySpace(self._keys, self._index)
        # Hashing every key is not free; every launch asks for it.
        self._fingerprint = _hash({"v": 1, "kind": "static", "keys": list(self._keys)})

    @property
    def static_keys(self) -> tuple[str, ...]:
        """The keys, in order."""
        return self._keys

    def key_space(self, now: datetime, dynamic_keys: Sequence[str] = ()) -> KeySpace:
        return self._space

    def fingerprint(self) -> str:
        return self._fingerprint

    def describe(self) -> PartitionsDescription:
        return PartitionsDescription(kind=self.kind, static_keys=self._keys)

    def validate_key(self, key: str) -> str | None:
        return None


class DynamicPartitions(PartitionsDefinition):
    """A named set of keys stored in the database and passed to ``key_space``.

    Args:
        name: The name of the set (non-empty).

    Raises:
        ValueError: On an empty name.
    """

    kind = PartitionsKind.DYNAMIC

    def __init__(self, name: str) -> None:
        if not isinstance(name, str) or not name.strip():
            raise ValueError("DynamicPartitions name must be a non-empty string")
        self.name = name

    def key_space(self, now: datetime, dynamic_keys: Sequence[str] = ()) -> KeySpace:
        """Return the given keys, in the given order.

        Raises:
            ValueError: On an empty-string key or a duplicate in ``dynamic_keys``.
        """
        keys, index = _checked_keys(dynamic_keys, f"DynamicPartitions({self.name!r})")
        return _ListKeySpace(keys, index)

    def fingerprint(self) -> str:
        return _hash({"v": 1, "kind": "dynamic", "name": self.name})

    def describe(self) -> PartitionsDescription:
        return PartitionsDescription(kind=self.kind, dynamic_name=self.name)

    def validate_key(self, key: str) -> str | None:
        return None


# --------------------------------------------------------------------------------------------
# Time helpers (instants are integer POSIX seconds)


def _zone(timezone: str) -> ZoneInfo:
    if not isinstance(timezone, str) or not timezone:
        raise ValueError(f"timezone must be an IANA name such as 'UTC', got {timezone!r}")
    try:
        return ZoneInfo(timezone)
    except (ZoneInfoNotFoundError, ValueError) as exc:
        raise ValueError(f"unknown timezone {timezone!r}") from exc


def _offset(tz: ZoneInfo, x: int) -> int:
    off = datetime.fromtimestamp(x, tz).utcoffset()
    assert off is not None
    return off.days * _DAY + off.seconds


def _residue(tz: ZoneInfo, x: int) -> int:
    return _offset(tz, x) % _HOUR


def _localize(wall: datetime, tz: ZoneInfo, fold: int = 0) -> int:
    """Instant of a naive wall time; a nonexistent one resolves forward by the gap (fold=0)."""
    return int(wall.replace(tzinfo=tz, fold=fold).timestamp())


def _wall_exists(wall: datetime, tz: ZoneInfo) -> bool:
    x = _localize(wall, tz)
    return datetime.fromtimestamp(x, tz).replace(tzinfo=None) == wall


def _format_offset(seconds: int) -> str:
    sign = "+" if seconds >= 0 else "-"
    seconds = abs(seconds)
    hh, rest = divmod(seconds, _HOUR)
    mm, ss = divmod(rest, 60)
    return f"{sign}{hh:02d}:{mm:02d}" + (f":{ss:02d}" if ss else "")


def _ceil_div(n: int, d: int) -> int:
    return -((-n) // d)


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


_FAST_DIRECTIVES = {"Y": 4, "m": 2, "d": 2, "H": 2, "M": 2, "S": 2}
_FAST_FIELDS = {"Y": "year", "m": "month", "d": "day", "H": "hour", "M": "minute", "S": "second"}


@functools.lru_cache(maxsize=256)
def _fast_pattern(fmt: str) -> tuple[re.Pattern[str], tuple[str, ...]] | None:
    """A strict regex for formats made of %Y %m %d %H %M %S and literals, else None."""
    parts: list[str] = []
    fields: list[str] = []
    i = 0
    while i < len(fmt):
        ch = fmt[i]
        if ch == "%":
            directive = fmt[i + 1 : i + 2]
            if directive not in _FAST_DIRECTIVES or _FAST_FIELDS[directive] in fields:
                return None
            parts.append(rf"(\d{{{_FAST_DIRECTIVES[directive]}}})")
            fields.append(_FAST_FIELDS[directive])
            i += 2
        else:
            parts.append(re.escape(ch))
            i += 1
    if not {"year", "month", "day"} <= set(fields):
        return None
    return re.compile("".join(parts)), tuple(fields)


@dataclass(frozen=True, slots=True)
class _NumericFormat:
    """A key format of fixed-width numbers and literals, read with one regex, no strptime.

    Every field has a fixed width, so a text that matches is also the canonical spelling of
    the values it holds (``strftime`` gives it back) whenever they form a valid datetime.
    The attributes are the regex group of each field (None when the format has none).
    """

    pattern: re.Pattern[str]
    year: int
    month: int
    day: int
    hour: int | None
    minute: int | None
    second: int | None
    time_groups: tuple[int, ...]  # the groups of hour, minute and second that there are

    def read(self, text: str) -> tuple[int, int, int, int, int, int] | None:
        """``(year, month, day, hour, minute, second)`` of ``text``, or None if no match."""
        m = self.pattern.fullmatch(text)
        if m is None:
            return None
        g = m.groups()
        return (
            int(g[self.year]),
            int(g[self.month]),
            int(g[self.day]),
            0 if self.hour is None else int(g[self.hour]),
            0 if self.minute is None else int(g[self.minute]),
            0 if self.second is None else int(g[self.second]),
        )


@functools.lru_cache(maxsize=256)
def _numeric_format(fmt: str) -> _NumericFormat | None:
    fast = _fast_pattern(fmt)
    if fast is None:
        return None
    where = {name: i for i, name in enumerate(fast[1])}
    return _NumericFormat(
        fast[0],
        where["year"],
        where["month"],
        where["day"],
        where.get("hour"),
        where.get("minute"),
        where.get("second"),
        tuple(where[name] for name in ("hour", "minute", "second") if name in where),
    )


def _strptime(text: str, fmt: str) -> datetime:
    """``datetime.strptime`` with a fast path for zero-padded numeric formats."""
    fast = _fast_pattern(fmt)
    if fast is None:
        return datetime.strptime(text, fmt)
    m = fast[0].fullmatch(text)
    if m is None:
        raise ValueError(f"{text!r} does not match {fmt!r}")
    values = dict(zip(fast[1], map(int, m.groups()), strict=True))
    return datetime(**values)  # type: ignore[arg-type]


def _utc_year(x: int) -> int:
    return datetime.fromtimestamp(x, UTC).year


def _check_fmt(fmt: str, samples: Sequence[datetime], what: str) -> None:
    if not isinstance(fmt, str) or not fmt:
        raise ValueError(f"{what}: fmt must be a non-empty strftime format")
    for sample in samples:
        try:
            text = sample.strftime(fmt)
            back = datetime.strptime(text, fmt)
        except ValueError as exc:
            raise ValueError(f"{what}: fmt {fmt!r} does not round-trip: {exc}") from exc
        if back != sample:
            raise ValueError(
                f"{what}: fmt {fmt!r} cannot represent {sample.isoformat()} "
                f"(formats as {text!r}, parses back as {back.isoformat()})"
            )
        try:
            datetime.strptime(text + "+01:00", fmt)
        except ValueError:
            pass
        else:
            raise ValueError(f"{what}: fmt {fmt!r} must not accept a trailing UTC offset")


def _sample_days() -> list[date]:
    return [date(2024, 2, 29), date(1999, 12, 31), date(2001, 1, 1), date(2023, 10, 7)]


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
                for y in sorted(batch):
                    if y > last and (self.end_bound is None or y <= self.end_bound):
                        self.starts.append(y)
                        last = y
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
