"""Key formats: reading keys fast, and checking that a format round-trips."""

from __future__ import annotations

import functools
import re
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import date, datetime

_SUFFIX_RE = re.compile(r"([+-])(\d{2}):(\d{2})(?::(\d{2}))?$")
"""The UTC offset that keys the second occurrence of a repeated local time."""

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
