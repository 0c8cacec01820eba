"""Asset backfills in the browser: the launch form's asset selection and its per-asset preview,
the asset graph with per-asset progress on the backfill page, the Assets page, and enum values
the UI does not know."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest

from tests.browser.conftest import Stack, shoot
from tests.support import LAUNCH

pytestmark = pytest.mark.browser

BACKFILL = """
query($id: ID!) {
  backfill(id: $id) {
    id status title
    assets { name level counts { total succeeded failed skipped canceled done } }
  }
}"""
TITLES = "{ backfills(first: 100) { nodes { title } } }"
GRAPH = ["raw_events", "daily_visits", "daily_signups", "monthly_report"]


def launch(stack: Stack, **input: Any) -> str:
    data = stack.graphql(LAUNCH, {"input": input})
    assert data["launchBackfill"]["userErrors"] == []
    return str(data["launchBackfill"]["backfill"]["id"])


def backfill(stack: Stack, id: str) -> dict[str, Any]:
    return dict(stack.graphql(BACKFILL, {"id": id})["backfill"])


def test_an_asset_backfill_from_the_form_runs_what_the_preview_said(
    ui_stack: Stack, new_page: Callable[..., Any]
) -> None:
    # Two days of raw_events already succeeded: the preview must skip them, and only them.
    first = launch(
        ui_stack,
        target={"assets": {"names": ["raw_events"]}},
        partitions={"range": {"start": "2024-05-01", "end": "2024-05-02"}},
    )
    page = new_page()  # the form loads while they run
    page.goto(f"{ui_stack.url}/#/launch?assets=raw_events&downstream=1")
    page.wait_for_selector("#launch-asset-raw_events:checked")
    assert page.is_checked("#launch-downstream")
    for _ in range(300):
        if backfill(ui_stack, first)["status"] == "COMPLETED_SUCCESS":
            break
        page.wait_for_timeout(100)
    assert backfill(ui_stack, first)["status"] == "COMPLETED_SUCCESS"
    page.fill("#launch-start", "2024-05-01")
    page.fill("#launch-end", "2024-05-06")
    page.fill("#launch-title", "May, first six days, with downstream")
    rows = page.locator("#preview-assets tbody tr")
    page.locator('[data-preview-asset="raw_events"][data-skipped="2"]').wait_for()
    preview = {
        str(row.get_attribute("data-preview-asset")): {
            key: int(str(row.get_attribute(f"data-{key}")))
            for key in ("level", "runs", "skipped", "total")
        }
        for row in rows.all()
    }
    assert list(preview) == GRAPH  # by level; within a level, as the server ordered them
    assert [p["level"] for p in preview.values()] == [0, 1, 1, 2]
    assert preview["raw_events"] == {"level": 0, "runs": 4, "skipped": 2, "total": 6}
    assert preview["daily_visits"]["runs"] == 6
    shoot(page, "launch-assets")

    page.dblclick("#launch-submit")
    page.wait_for_url("**/#/backfills/bf_*")
    id = page.url.rsplit("/", 1)[-1]
    page.wait_for_selector('h1 .badge[data-status="COMPLETED_SUCCESS"]', timeout=20_000)
    graph = page.locator("#backfill-assets .asset-graph")
    for name in GRAPH:
        node = graph.locator(f'.asset-node[data-asset="{name}"]')
        node.locator('.progress-percent:text("100%")').wait_for()
        total = preview[name]["total"]
        assert node.locator(".progress-counts").inner_text() == f"{total} / {total}"
    assert graph.get_attribute("data-edges") == "4"

    # What ran is what the preview said, per asset; and the double click launched once.
    ran = {a["name"]: a for a in backfill(ui_stack, id)["assets"]}
    for name, expected in preview.items():
        counts = ran[name]["counts"]
        assert (counts["succeeded"], counts["skipped"]) == (expected["runs"], expected["skipped"])
        assert ran[name]["level"] == expected["level"]
    titles = [b["title"] for b in ui_stack.graphql(TITLES)["backfills"]["nodes"]]
    assert titles.count("May, first six days, with downstream") == 1
    skipped = graph.locator('.asset-node[data-asset="raw_events"] [data-figure="skipped"]')
    assert skipped.inner_text() == "2 skipped"
    shoot(page, "asset-graph")

    # The keyboard follows the edges, and Enter shows the chosen asset's partitions.
    page.focus('.asset-node[data-asset="raw_events"]')
    page.keyboard.press("ArrowDown")
    assert page.evaluate("document.activeElement.dataset.asset") == "daily_visits"
    page.keyboard.press("ArrowDown")
    assert page.evaluate("document.activeElement.dataset.asset") == "monthly_report"
    page.keyboard.press("Enter")
    page.locator("#partitions-title").filter(has_text="monthly_report").wait_for()
    assert page.get_attribute('.asset-node[data-asset="monthly_report"]', "aria-current") == "true"


def test_the_assets_page_draws_the_graph_and_launches_an_asset_with_its_downstream(
    ui_server: Stack, new_page: Callable[..., Any]
) -> None:
    page = new_page()
    page.goto(f"{ui_server.url}/#/assets")
    page.wait_for_selector('.card[data-ready="true"] .asset-node')
    graph = page.locator(".asset-graph")
    assert graph.get_attribute("data-edges") == "4"
    levels = page.locator(".asset-level")
    assert levels.count() == 3
    assert levels.nth(1).locator(".asset-node").count() == 2
    report = page.locator('.asset-node[data-asset="monthly_report"]')
    assert "after daily_visits and daily_signups" in report.inner_text()
    assert "6 never ran" in report.inner_text()
    assert page.locator('[data-nav="assets"]').get_attribute("aria-current") == "page"
    shoot(page, "assets")

    # Keyboard: a node, then its launch link with what depends on it.
    page.focus('.asset-node[data-asset="raw_events"]')
    page.keyboard.press("Tab")
    page.keyboard.press("Tab")
    assert page.evaluate("document.activeElement.dataset.launch") == "downstream"
    page.keyboard.press("Enter")
    page.wait_for_url("**/#/launch?assets=raw_events&downstream=1")
    page.wait_for_selector("#launch-asset-raw_events:checked")
    assert page.is_checked("#launch-target-assets") and page.is_checked("#launch-downstream")
    help = page.locator("#launch-assets-help")
    help.filter(has_text="4 assets").wait_for()
    assert "Partitions are those of raw_events" in help.inner_text()

    # Choosing nothing is refused next to the assets, not sent.
    page.uncheck("#launch-asset-raw_events")
    page.locator("#launch-assets-error").filter(has_text="Choose at least one asset").wait_for()
    page.click("#launch-submit")
    assert page.evaluate("document.activeElement.name") == "asset"
    assert "#/launch" in page.url


def unknown_values(route: Any) -> None:
    """Answer as a newer server would: enum values this UI has never heard of."""
    operation = json.loads(route.request.post_data or "{}").get("operationName")
    response = route.fetch()
    body = response.json()
    data = body.get("data") or {}
    if operation == "UiBackfill" and data.get("backfill"):
        data["backfill"]["status"] = "ARCHIVED"
    elif operation == "UiBackfills":
        for node in data["backfills"]["nodes"]:
            node["status"] = "ARCHIVED"
    elif operation == "UiBackfillTimeline" and data.get("backfill"):
        # The page's one read: its status, ranges and runs, as a newer server sends them.
        timeline = data["backfill"]["timeline"]
        data["backfill"]["status"] = timeline["status"] = "ARCHIVED"
        for r in timeline["partitionStatusRanges"]:
            r["status"] = "DEFERRED"
        runs = timeline["runs"]
        for column, value in {
            "ids": "run_999999", "jobs": "daily_sales", "partitionKeys": "2024-01-10",
            "attempts": 1, "statuses": "PREEMPTED", "workers": None, "queuedAt": 1704844800.0,
            "startedAt": None, "endedAt": None, "failureReasons": "SPOT_RECLAIMED",
            "errorMessages": None,
        }.items():  # fmt: skip
            runs[column] = [value]
    elif operation == "UiBackfillRuns" and data.get("backfill"):
        data["backfill"]["runs"]["nodes"] = [
            {
                "id": "run_999999",
                "job": "daily_sales",
                "asset": None,
                "partitionKey": "2024-01-10",
                "attempt": 1,
                "status": "PREEMPTED",
                "failureReason": "SPOT_RECLAIMED",
                "errorMessage": None,
                "queuedAt": "2024-01-10T00:00:00+00:00",
                "startedAt": None,
                "endedAt": None,
                "durationSeconds": None,
                "backfillId": data["backfill"]["id"],
            }
        ]
    route.fulfill(response=response, json=body)


def test_enum_values_the_ui_does_not_know_show_as_unknown(
    ui_server: Stack, new_page: Callable[..., Any]
) -> None:
    id = launch(
        ui_server,
        target={"job": "daily_sales"},
        partitions={"range": {"start": "2024-01-10", "end": "2024-01-12"}},
        title="From a newer server",
    )
    page = new_page()
    page.route("**/graphql/v1", unknown_values)
    page.route_web_socket(lambda url: "/graphql" in url, lambda socket: None)
    page.goto(f"{ui_server.url}/#/backfills")
    row = page.locator(f'tr[data-id="{id}"]')
    row.locator(".badge-unknown").filter(has_text="Unknown").wait_for()

    page.goto(f"{ui_server.url}/#/backfills/{id}")
    badge = page.locator("h1 .badge-unknown")
    badge.wait_for()
    assert badge.inner_text() == "Unknown"
    assert badge.get_attribute("title") == "Not known to this page: ARCHIVED"
    page.locator('.legend [data-status="UNKNOWN"]').filter(has_text="Unknown 3").wait_for()
    run = page.locator('tr[data-run-id="run_999999"]')
    run.locator(".badge-unknown").wait_for()
    assert "spot reclaimed" in run.inner_text().lower()
    page.locator(".strip-canvas").focus()
    page.locator(".strip-tooltip").filter(has_text="Unknown").wait_for()
    shoot(page, "unknown-enum", full_page=False)
