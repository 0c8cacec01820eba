"""Definitions of ``bench.stack``: no-op jobs of every partition kind, and an asset chain.

The benchmark copies this file next to each checkout it runs (its own and ``--against``'s), so
both run the very same jobs; it uses only names that every measured release exports, and adds
the asset chain only where the release has assets.
"""

from __future__ import annotations

from backfiller import (
    DailyPartitions,
    Definitions,
    DynamicPartitions,
    HourlyPartitions,
    MonthlyPartitions,
    RunContext,
    StaticPartitions,
    TimePartitions,
    WeeklyPartitions,
    job,
)

STATIC_KEYS = [f"k{i:05d}" for i in range(10_000)]
DYNAMIC_SET = "bench_keys"
ASSET_LEVELS = 3


def _noop(context: RunContext) -> None:
    """Does nothing: measures the service, not the job."""


def _job(name: str, partitions: object) -> object:
    return job(name=name, partitions=partitions)(_noop)


JOBS = [
    _job("daily", DailyPartitions(start="1970-01-01")),
    _job("hourly", HourlyPartitions(start="2000-01-01-00:00")),
    _job("hourly_berlin", HourlyPartitions(start="2000-01-01-00:00", timezone="Europe/Berlin")),
    _job("weekly", WeeklyPartitions(start="1850-01-07", day_of_week=0)),
    _job("monthly", MonthlyPartitions(start="1200-01-01")),
    _job(
        "minute",
        TimePartitions(cron="* * * * *", start="2026-01-01-00:00", end="2026-01-15-00:00"),
    ),
    _job("cron", TimePartitions(cron="15 */6 * * 1-5", start="2010-01-01-00:00")),
    _job("static", StaticPartitions(STATIC_KEYS)),
    _job("dynamic", DynamicPartitions(DYNAMIC_SET)),
]


def _assets() -> list[object]:
    try:
        from backfiller import asset
    except ImportError:  # a release before assets
        return []
    days = DailyPartitions(start="1970-01-01", end="2030-01-01")
    return [
        asset(name=f"level{i}", partitions=days, deps=[f"level{i - 1}"] if i else [])(_noop)
        for i in range(ASSET_LEVELS)
    ]


_ASSETS = _assets()
definitions = (
    Definitions(jobs=JOBS, assets=_ASSETS) if _ASSETS else Definitions(jobs=JOBS)  # type: ignore[arg-type]
)
