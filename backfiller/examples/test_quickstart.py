"""An example of a user's own test: the quickstart's jobs and assets run by
``backfiller.testing``, as a project would test its definitions in its own suite (no server, no
daemon process, a temporary SQLite file). The project's CI runs it (``make test``)."""

from __future__ import annotations

from backfiller import AssetSelection, BackfillRequest, PartitionKeys, PartitionRange
from backfiller.examples.quickstart import definitions
from backfiller.testing import LaunchRefused, run_backfill, temporary_backend
from backfiller_client import BackfillStatus, RunStatus

WEEK = PartitionRange("2024-03-04", "2024-03-10")
TIMED_OUT = "ConnectionError: partner endpoint timed out; will retry"
REJECTED = "RuntimeError: partner rejected the file of 2024-01-17"


async def test_a_report_runs_once_per_region_with_its_config() -> None:
    async with temporary_backend(definitions) as backend:
        done = await run_backfill(
            backend,
            BackfillRequest(
                job="region_report",
                partitions=PartitionKeys(["emea", "apac"]),
                run_config={"currency": "EUR"},
            ),
        )
    assert done.status is BackfillStatus.COMPLETED_SUCCESS
    assert [(r.partition_key, r.attempt, r.status) for r in done.runs] == [
        ("emea", 1, RunStatus.SUCCESS),
        ("apac", 1, RunStatus.SUCCESS),
    ]


async def test_a_flaky_export_is_retried_and_a_day_that_always_fails_fails_the_backfill() -> None:
    """``flaky_export`` retries twice, a second later: the 15th times out once, the 17th is
    rejected on every attempt (the real clock: the test waits for the retries' delay)."""
    days = PartitionRange("2024-01-15", "2024-01-18")
    async with temporary_backend(definitions) as backend:
        done = await run_backfill(backend, BackfillRequest(job="flaky_export", partitions=days))
    assert done.status is BackfillStatus.COMPLETED_FAILED
    assert [(r.partition_key, r.attempt, r.status, r.error_message) for r in done.runs] == [
        ("2024-01-15", 1, RunStatus.FAILED, TIMED_OUT),
        ("2024-01-16", 1, RunStatus.SUCCESS, None),
        ("2024-01-17", 1, RunStatus.FAILED, REJECTED),
        ("2024-01-18", 1, RunStatus.SUCCESS, None),
        ("2024-01-15", 2, RunStatus.SUCCESS, None),
        ("2024-01-17", 2, RunStatus.FAILED, REJECTED),
        ("2024-01-17", 3, RunStatus.FAILED, REJECTED),
    ]


async def test_a_bad_run_config_is_refused_as_the_api_refuses_it() -> None:
    async with temporary_backend(definitions) as backend:
        try:
            await run_backfill(
                backend,
                BackfillRequest(
                    job="region_report", partitions=WEEK, run_config={"currency": "GBP"}
                ),
            )
        except LaunchRefused as refused:
            problems = [(p.code.value, p.field) for p in refused.problems]
        else:
            raise AssertionError("launched")
    assert problems == [("invalid_run_config", ("run_config", "currency"))]


async def test_an_asset_and_what_depends_on_it_run_after_their_upstreams() -> None:
    async with temporary_backend(definitions) as backend:
        done = await run_backfill(
            backend,
            BackfillRequest(
                assets=AssetSelection(["daily_visits"], downstream=True),
                partitions=PartitionRange("2024-03-30", "2024-04-01"),
            ),
        )
    assert done.status is BackfillStatus.COMPLETED_SUCCESS
    ran = [(r.job, r.partition_key) for r in done.runs]
    assert sorted(ran) == [
        ("daily_visits", "2024-03-30"),
        ("daily_visits", "2024-03-31"),
        ("daily_visits", "2024-04-01"),
        ("monthly_report", "2024-03-01"),
        ("monthly_report", "2024-04-01"),
        ("visits_summary", "default"),
    ]
    # Each after what it depends on: a month after its days, the summary after the months.
    assert ran.index(("monthly_report", "2024-03-01")) > ran.index(("daily_visits", "2024-03-31"))
    assert ran.index(("monthly_report", "2024-04-01")) > ran.index(("daily_visits", "2024-04-01"))
    assert ran[-1] == ("visits_summary", "default")
