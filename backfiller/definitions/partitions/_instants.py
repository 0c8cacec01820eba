"""Time helpers of the time partitions: instants are integer POSIX seconds."""

from __future__ import annotations

from datetime import UTC, date, datetime
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

_HOUR = 3600
_DAY = 86400
_MIN_YEAR = 1000
_MAX_YEAR = 9998
_PROBE_STEP = 3 * _DAY
_EPOCH_ORDINAL = date(1970, 1, 1).toordinal()
_MIN_INSTANT = int(datetime(_MIN_YEAR - 1, 12, 30, tzinfo=UTC).timestamp())
_MAX_INSTANT = int(datetime(_MAX_YEAR, 12, 30, tzinfo=UTC).timestamp())


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


def _utc_year(x: int) -> int:
    return datetime.fromtimestamp(x, UTC).year
