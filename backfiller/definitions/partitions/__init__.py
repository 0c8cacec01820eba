"""Partitions definitions: the set of partition keys of a job.

This module is pure: no IO, no database. It answers questions such as "how many partitions
are there", "what is the 10,000th key", "which index has this key" and "which time window does
this key cover" without ever expanding a whole key list.

Interface (others code against these names)::

    class KeySpace(Protocol):           # an ordered, finite snapshot of keys, oldest first
        def __len__(self) -> int
        def key_at(self, index: int) -> str            # IndexError outside [0, len)
        def index_of(self, key: str) -> int | None     # None when the key is not a partition
        def indexes_of(self, keys: Sequence[str]) -> list[int | None]  # index_of of many keys
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

from backfiller.definitions.partitions._cron import MAX_CRON_WINDOWS
from backfiller.definitions.partitions._definition import (
    KeySpace,
    PartitionsDefinition,
    PartitionsDescription,
    PartitionsKind,
)
from backfiller.definitions.partitions._static import DynamicPartitions, StaticPartitions
from backfiller.definitions.partitions._windows import (
    DailyPartitions,
    HourlyPartitions,
    MonthlyPartitions,
    TimePartitions,
    WeeklyPartitions,
)

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
