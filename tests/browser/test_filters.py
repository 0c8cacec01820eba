"""The backfill list's search and filters in a browser: every filter from the page's fields,
kept in the URL (a deep link opens the same list; the back button walks back through them),
served by the API."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import pytest

from tests.browser.conftest import Stack, shoot

pytestmark = pytest.mark.browser


def listed(page: Any) -> list[str]:
    return [str(r.get_attribute("data-id")) for r in page.locator("table tbody tr").all()]


def wait_listed(page: Any, expected: list[str]) -> None:
    page.wait_for_function(
        "ids => JSON.stringify([...document.querySelectorAll('table tbody tr')]"
        ".map(r => r.dataset.id)) === JSON.stringify(ids)",
        arg=expected,
    )


def test_search_and_filters_live_in_the_url(ui_server: Stack, new_page: Callable[..., Any]) -> None:
    marker = "zebra-7"  # a word no other test's title has
    sales = ui_server.launch(
        target={"job": "daily_sales"},
        partitions={"keys": ["2024-02-01"]},
        title=f"Sales {marker} rerun",
        tags=[{"key": "ticket", "value": "ZB-1"}, {"key": "team", "value": "sales"}],
    )
    visits = ui_server.launch(
        target={"assets": {"names": ["daily_visits"]}},
        partitions={"keys": ["2024-02-01"]},
        title=f"Visits {marker}",
        tags=[{"key": "ticket", "value": "ZB-2"}],
    )
    page = new_page()
    page.goto(f"{ui_server.url}/#/backfills")
    page.locator("table tbody tr").first.wait_for()

    page.keyboard.press("/")  # the shortcut to the search field
    assert page.evaluate("document.activeElement.id") == "filter-search"
    page.keyboard.type(marker.upper())
    page.wait_for_url(re.compile(r".*search=ZEBRA-7"))
    wait_listed(page, [visits, sales])
    assert page.evaluate("document.activeElement.id") == "filter-search"  # typing goes on

    page.select_option("#filter-target", "daily_visits")  # an asset
    page.wait_for_url(re.compile(r".*target=daily_visits"))
    wait_listed(page, [visits])
    page.select_option("#filter-target", "daily_sales")  # a job
    wait_listed(page, [sales])
    page.fill("#filter-tag", "ticket=ZB-1, team=sales")
    page.keyboard.press("Enter")
    page.wait_for_url(re.compile(r".*tag=ticket"))
    wait_listed(page, [sales])
    page.select_option("#filter-status", "REQUESTED")
    wait_listed(page, [sales])
    page.fill("#filter-from", "2000-01-01")
    page.locator("#filter-from").dispatch_event("change")
    wait_listed(page, [sales])
    page.fill("#filter-to", "2000-01-02")
    page.locator("#filter-to").dispatch_event("change")
    page.locator("text=No backfill matches these filters.").wait_for()
    shoot(page, "backfills-filtered-empty", full_page=False)

    # Back: the list before the last filter; a deep link opens the same list elsewhere.
    page.go_back()
    wait_listed(page, [sales])
    deep = page.url
    assert page.input_value("#filter-tag") == "ticket=ZB-1, team=sales"
    other = new_page()
    other.goto(deep)
    wait_listed(other, [sales])
    assert other.input_value("#filter-search") == "ZEBRA-7"
    assert other.input_value("#filter-target") == "daily_sales"
    shoot(other, "backfills-filtered")
    other.locator("#filters-clear").click()
    other.wait_for_url(re.compile(r".*#/backfills$"))
    other.locator(f'tr[data-id="{visits}"]').wait_for()
