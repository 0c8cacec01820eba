"""Marking partitions by hand from the jobs page: the form, its typed errors, the job's marks,
and the marked state in the job's strip."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from tests.browser.conftest import Stack

STRIP = """query { job(name: "weather_history") {
  partitionStatusRanges { status startKey endKey } } }"""


def test_a_partition_is_marked_from_the_jobs_page(
    ui_server: Stack, new_page: Callable[..., Any]
) -> None:
    page = new_page()
    page.goto(f"{ui_server.url}/#/jobs")
    card = page.locator('.job-card[data-job="weather_history"]')
    card.locator(".mark-panel > summary").click()
    form = card.locator(".mark-form")
    form.locator('input[name="keys"]').fill("2020-02-30")
    form.locator('input[name="reason"]').fill("a known-bad day")
    form.locator('button[type="submit"]').click()
    card.locator(".mark-result .alert-error", has_text="INVALID_PARTITION_RANGE").wait_for()

    form.locator('input[name="keys"]').fill("2020-02-29")
    form.locator('select[name="status"]').select_option("SKIPPED")
    form.locator('input[name="reason"]').fill("a known-bad day")
    form.locator('button[type="submit"]').click()
    card.locator(".mark-result", has_text="Marked 1 partitions skipped").wait_for()
    card.locator(".mark-history li", has_text="2020-02-29").filter(
        has_text="a known-bad day"
    ).wait_for()

    ranges = ui_server.graphql(STRIP)["job"]["partitionStatusRanges"]
    assert {"status": "SKIPPED", "startKey": "2020-02-29", "endKey": "2020-02-29"} in ranges


def test_a_marked_partition_shows_how_it_was_marked_under_the_strip(
    ui_server: Stack, new_page: Callable[..., Any]
) -> None:
    page = new_page()
    page.goto(f"{ui_server.url}/#/jobs")
    card = page.locator('.job-card[data-job="region_report"]')
    card.locator(".mark-panel > summary").click()
    form = card.locator(".mark-form")
    form.locator('input[name="keys"]').fill("apac")
    form.locator('input[name="reason"]').fill("copied from the old warehouse")
    form.locator('button[type="submit"]').click()
    card.locator(".mark-result", has_text="Marked 1 partitions succeeded").wait_for()

    strip = card.locator(".strip-canvas")
    strip.focus()
    strip.press("End")
    strip.press("Enter")
    panel = card.locator(".partition-panel")
    panel.locator("h3", has_text="Partition apac").wait_for()
    panel.locator(".mark-history li", has_text="copied from the old warehouse").wait_for()
    assert "succeeded" in panel.locator(".mark-history li").first.inner_text()
