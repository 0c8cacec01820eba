"""Launch, watch, pause, resume, cancel and retry in the browser, with the daemon running."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import expect

from tests.browser.conftest import ConsoleWatch, Stack, held_until, shoot, wait_until
from tests.support import LAUNCH

pytestmark = [pytest.mark.browser, pytest.mark.slow]

BACKFILL = """
query($id: ID!) {
  backfill(id: $id) {
    id status title parent { id }
    counts { total pending queued running succeeded failed canceled skipped }
    runs(first: 100) { nodes { partitionKey status } }
  }
}"""
BACKFILLS = """
query($job: String) {
  backfills(first: 100, filter: { job: $job }) { nodes { id title status } }
}"""


def launch(stack: Stack, **input: Any) -> str:
    data = stack.graphql(LAUNCH, {"input": input})
    assert data["launchBackfill"]["userErrors"] == []
    return str(data["launchBackfill"]["backfill"]["id"])


def backfill(stack: Stack, id: str) -> dict[str, Any]:
    return dict(stack.graphql(BACKFILL, {"id": id})["backfill"])


def wait_status(page: Any, *statuses: str, timeout: float = 60_000) -> str:
    """Wait until the page's status badge shows one of these statuses."""
    selector = ", ".join(f'h1 .badge[data-status="{s}"]' for s in statuses)
    page.wait_for_selector(selector, timeout=timeout)
    return str(page.locator("h1 .badge").get_attribute("data-status"))


def test_launch_from_the_form_runs_what_the_preview_said_and_once(
    ui_stack: Stack, new_page: Callable[..., Any]
) -> None:
    # Three days already succeeded: the preview must say they are skipped.
    first = launch(
        ui_stack,
        target={"job": "daily_sales"},
        partitions={"range": {"start": "2024-02-01", "end": "2024-02-03"}},
    )
    wait_until(lambda: backfill(ui_stack, first)["status"] == "COMPLETED_SUCCESS")

    page = new_page()
    page.goto(f"{ui_stack.url}/#/launch?job=daily_sales")
    # As a person would: the page has loaded the job and previewed its whole range first.
    page.wait_for_selector("#preview-summary")
    page.fill("#launch-start", "2024-02-01")
    page.fill("#launch-end", "2024-02-10")
    page.fill("#launch-title", "February, first ten days")
    page.click("text=Add a tag")
    page.fill("#launch-tag-key-1", "ticket")
    page.fill("#launch-tag-value-1", "DATA-7")
    # On a timeout, say what the preview and the form's errors showed instead.
    try:
        expect(page.locator("#launch-preview")).to_contain_text("7 runs", timeout=15_000)
    except AssertionError as failed:
        shown = page.locator(".field-error:not([hidden]), .alert-error").all_inner_texts()
        raise AssertionError(f"{failed}\nerrors on the form: {shown}") from None
    summary = page.locator("#preview-summary")
    assert "3 skipped because already succeeded" in summary.inner_text()
    preview_runs = int(str(page.locator("[data-preview-runs]").get_attribute("data-preview-runs")))
    shoot(page, "launch")

    page.dblclick("#launch-submit")
    page.wait_for_url("**/#/backfills/bf_*")
    status = wait_status(page, "COMPLETED_SUCCESS", "COMPLETED_FAILED")
    page.wait_for_selector('.progress-percent:text("100%")')
    shoot(page, "backfill-completed")

    created = ui_stack.graphql(BACKFILLS, {"job": "daily_sales"})["backfills"]["nodes"]
    mine = [b for b in created if b["title"] == "February, first ten days"]
    assert len(mine) == 1, "a double click launched more than one backfill"
    assert status == "COMPLETED_SUCCESS"
    result = backfill(ui_stack, mine[0]["id"])
    ran = {r["partitionKey"] for r in result["runs"]["nodes"]}
    assert len(ran) == preview_runs == result["counts"]["succeeded"] == 7
    assert result["counts"]["skipped"] == 3
    assert page.locator('[data-count="succeeded"] dd').inner_text() == "7"


def test_pause_and_resume_disable_the_button_in_flight(
    ui_stack: Stack, new_page: Callable[..., Any]
) -> None:
    id = launch(
        ui_stack,
        target={"job": "slow_rebuild"},
        partitions={"range": {"start": "2025-01-01", "end": "2025-01-06"}},
        title="Pause me",
    )
    page = new_page()
    page.goto(f"{ui_stack.url}/#/backfills/{id}")
    wait_status(page, "REQUESTED", "RUNNING")

    # Hold the pause request until we have seen the button disabled, then let it through.
    held: list[Any] = []

    def hold(route: Any) -> None:
        if "UiPauseBackfill" in (route.request.post_data or ""):
            held.append(route)
        else:
            route.continue_()

    page.route("**/graphql/v1", hold)
    pause = page.locator('button[data-action="pause"]')
    pause.click()
    held_until(page, held)
    assert pause.is_disabled()
    assert pause.get_attribute("aria-busy") == "true"
    held[0].continue_()
    page.unroute("**/graphql/v1")

    wait_status(page, "PAUSED")
    resume = page.locator('button[data-action="resume"]')
    resume.wait_for()
    assert not resume.is_disabled()
    assert pause.is_disabled()
    page.locator('.timeline-item[data-kind="PAUSED"]').wait_for()
    shoot(page, "backfill-paused")
    paused_running = backfill(ui_stack, id)["counts"]
    assert paused_running["pending"] > 0, "nothing left to resume"

    resume.click()
    wait_status(page, "REQUESTED", "RUNNING", "COMPLETED_SUCCESS")
    page.locator('.timeline-item[data-kind="RESUMED"]').wait_for()
    assert backfill(ui_stack, id)["status"] in {"REQUESTED", "RUNNING", "COMPLETED_SUCCESS"}
    # Leave nothing running for the next tests.
    page.click('button[data-action="cancel"]')
    page.click('button[data-action="cancel"]:text("Confirm cancel")')
    wait_status(page, "CANCELING", "CANCELED", "COMPLETED_SUCCESS")


EVENTS = """
query($id: ID!) { backfill(id: $id) { events(first: 100) { nodes { kind } } } }"""

# Slow down every events answer in the page, so that the loads asked by the subscription, the
# polling and the steering buttons overlap, as they do on a busy machine.
SLOW_EVENTS = """
const realFetch = window.fetch.bind(window);
window.fetch = async (url, init) => {
  const response = await realFetch(url, init);
  if (init && typeof init.body === "string" && init.body.includes("UiBackfillEvents")) {
    await new Promise((resolve) => setTimeout(resolve, 400));
  }
  return response;
};
"""


def test_each_event_shows_once_while_event_loads_overlap(
    ui_stack: Stack, new_page: Callable[..., Any]
) -> None:
    id = launch(
        ui_stack,
        target={"job": "slow_rebuild"},
        partitions={"range": {"start": "2025-01-21", "end": "2025-01-24"}},
        title="Overlapping event loads",
    )
    page = new_page()
    page.add_init_script(SLOW_EVENTS)
    page.goto(f"{ui_stack.url}/#/backfills/{id}")
    wait_status(page, "REQUESTED", "RUNNING")
    page.click('button[data-action="pause"]')
    wait_status(page, "PAUSED")
    page.click('button[data-action="resume"]')
    wait_status(page, "REQUESTED", "RUNNING", "COMPLETED_SUCCESS")
    page.click('button[data-action="cancel"]')
    page.click('button[data-action="cancel"]:text("Confirm cancel")')
    wait_status(page, "CANCELED", "COMPLETED_SUCCESS")

    def shown() -> list[str]:
        items = page.locator(".timeline-item")
        return [str(items.nth(i).get_attribute("data-kind")) for i in range(items.count())]

    def recorded() -> list[str]:
        nodes = ui_stack.graphql(EVENTS, {"id": id})["backfill"]["events"]["nodes"]
        return [str(node["kind"]) for node in nodes]

    wait_until(lambda: shown() == recorded(), timeout=20)
    assert shown().count("PAUSED") == 1
    assert shown().count("RESUMED") == 1


def test_cancel_a_running_backfill(ui_stack: Stack, new_page: Callable[..., Any]) -> None:
    id = launch(
        ui_stack,
        target={"job": "slow_rebuild"},
        partitions={"range": {"start": "2025-01-10", "end": "2025-01-20"}},
        title="Cancel me",
    )
    page = new_page()
    page.goto(f"{ui_stack.url}/#/backfills/{id}")
    wait_status(page, "RUNNING")
    wait_until(lambda: backfill(ui_stack, id)["counts"]["running"] > 0)

    cancel = page.locator('button[data-action="cancel"]')
    cancel.click()
    assert cancel.inner_text() == "Confirm cancel"
    cancel.click()
    wait_status(page, "CANCELED")
    page.locator('.timeline-item[data-kind="CANCELED"]').wait_for()
    shoot(page, "backfill-canceled")

    counts = backfill(ui_stack, id)["counts"]
    assert counts["running"] == 0 and counts["queued"] == 0
    assert counts["canceled"] > 0
    statuses = {r["status"] for r in backfill(ui_stack, id)["runs"]["nodes"]}
    assert "RUNNING" not in statuses and "QUEUED" not in statuses
    assert cancel.is_disabled()


def test_retry_failed_partitions(
    ui_stack: Stack, ui_test_dir: Path, new_page: Callable[..., Any]
) -> None:
    (ui_test_dir / "fixed").unlink(missing_ok=True)
    id = launch(
        ui_stack, target={"job": "flaky_export"}, partitions={"all": True}, title="Partner export"
    )
    page = new_page()
    page.goto(f"{ui_stack.url}/#/backfills/{id}")
    wait_status(page, "COMPLETED_FAILED")
    page.locator('.strip-canvas[data-drawn-ranges="12"]').wait_for()
    assert page.locator('[data-count="failed"] dd').inner_text() == "6"
    shoot(page, "backfill-failed")

    # The log viewer shows what a failed run said.
    page.locator('tr[data-status="FAILED"] button:text("Logs")').first.click()
    dialog = page.locator("dialog.log-dialog")
    dialog.wait_for()
    dialog.locator("text=partner rejected").first.wait_for()
    shoot(page, "log-viewer", full_page=False)
    page.keyboard.press("Escape")
    dialog.wait_for(state="detached")

    # The jobs page offers the same failures as a shortcut into the launch form.
    page.goto(f"{ui_stack.url}/#/jobs")
    page.click('[data-job="flaky_export"] [data-shortcut="failed"]')
    page.locator("#preview-summary").filter(has_text="6 runs").wait_for()
    assert page.is_checked("#launch-reprocess-FAILED_AND_MISSING")
    assert page.input_value("#launch-keys").split() == [f"shard-{n:02d}" for n in range(1, 13, 2)]

    page.goto(f"{ui_stack.url}/#/backfills/{id}")
    wait_status(page, "COMPLETED_FAILED")
    (ui_test_dir / "fixed").touch()
    page.select_option("#retry-include", "FAILED")
    page.click('button[data-action="retry"]')
    page.wait_for_url(lambda url: "#/backfills/bf_" in url and not url.endswith(f"/{id}"))
    wait_status(page, "COMPLETED_SUCCESS")
    page.locator(f'a[href="#/backfills/{id}"]').first.wait_for()

    child = backfill(ui_stack, page.url.rsplit("/", 1)[1])
    assert child["parent"] == {"id": id}
    assert child["counts"]["total"] == 6
    assert child["counts"]["succeeded"] == 6
    assert {r["partitionKey"] for r in child["runs"]["nodes"]} == {
        f"shard-{n:02d}" for n in range(1, 13, 2)
    }


def test_trigger_buttons(ui_stack: Stack, new_page: Callable[..., Any]) -> None:
    page = new_page()
    page.goto(f"{ui_stack.url}/#/triggers")
    card = page.locator('[data-trigger="march_landed"]')
    card.wait_for()

    card.locator('button[data-evaluate="dry-run"]').click()
    outcome = card.locator(".outcome-body")
    outcome.wait_for()
    assert outcome.get_attribute("data-outcome") == "LAUNCHED"
    assert "Dry run" in outcome.inner_text()
    assert "Would launch" in outcome.inner_text() and "Launched" not in outcome.inner_text()
    assert "7 runs" in outcome.inner_text()
    before = ui_stack.graphql(BACKFILLS, {"job": "daily_sales"})["backfills"]["nodes"]
    assert not [b for b in before if b["title"] == "March, first week (trigger)"]

    card.locator('button[data-evaluate="launch"]').click()
    card.locator(".outcome-body a:text('Open backfill')").wait_for()
    card.locator(".evaluations tbody tr").nth(1).wait_for()
    shoot(page, "triggers")

    skip_card = page.locator('[data-trigger="upstream_ready"]')
    skip_card.locator('button[data-evaluate="launch"]').click()
    skip_card.locator('.outcome-body[data-outcome="SKIPPED"]').wait_for()
    assert "upstream export has not landed" in skip_card.locator(".outcome-body").inner_text()

    card.locator(".outcome-body a:text('Open backfill')").click()
    wait_status(page, "REQUESTED", "RUNNING", "COMPLETED_SUCCESS")
    after = ui_stack.graphql(BACKFILLS, {"job": "daily_sales"})["backfills"]["nodes"]
    assert len([b for b in after if b["title"] == "March, first week (trigger)"]) == 1


def test_a_cron_trigger_shows_its_schedule_and_next_fire_times_in_its_zone(
    ui_stack: Stack, new_page: Callable[..., Any]
) -> None:
    page = new_page()
    page.goto(f"{ui_stack.url}/#/triggers")
    card = page.locator('[data-trigger="nightly_berlin"]')
    card.wait_for()
    expect(card.locator(".facts")).to_contain_text("cron 0 3 * * * (Europe/Berlin)")
    times = card.locator(".fire-times li")
    expect(times).to_have_count(5)
    served = ui_stack.graphql('{ trigger(name: "nightly_berlin") { nextFireTimes(count: 5) } }')[
        "trigger"
    ]["nextFireTimes"]
    shown = [times.nth(i).locator("time").get_attribute("datetime") for i in range(5)]
    assert shown == served
    # On Berlin's wall clock: 03:00 every time, whatever the browser's zone.
    texts = [times.nth(i).inner_text() for i in range(5)]
    assert all("3:00" in t for t in texts), texts
    assert card.locator('input[type="checkbox"]').is_enabled()


def test_live_page_survives_a_finished_backfill_without_console_errors(
    ui_stack: Stack, new_page: Callable[..., Any], console: ConsoleWatch
) -> None:
    """The list and the jobs page follow running backfills by themselves."""
    page = new_page()
    page.goto(f"{ui_stack.url}/#/backfills")
    page.wait_for_selector("table tbody tr")
    id = launch(
        ui_stack,
        target={"job": "daily_sales"},
        partitions={"range": {"start": "2024-03-20", "end": "2024-03-25"}},
        title="Appears by itself",
    )
    row = page.locator(f'tr[data-id="{id}"]')
    row.wait_for(timeout=30_000)
    page.locator(f'tr[data-id="{id}"][data-status="COMPLETED_SUCCESS"]').wait_for(timeout=60_000)
    assert "100%" in row.inner_text()
    shoot(page, "backfills")
    page.goto(f"{ui_stack.url}/#/jobs")
    page.locator('[data-job="daily_sales"] .strip-canvas').wait_for()
    shoot(page, "jobs")
    assert console.unexpected() == []


def test_progress_arrives_through_the_subscription(
    ui_stack: Stack, new_page: Callable[..., Any], console: ConsoleWatch
) -> None:
    id = launch(
        ui_stack,
        target={"job": "slow_rebuild"},
        partitions={"range": {"start": "2025-01-25", "end": "2025-01-27"}},
        title="Watched live",
    )
    page = new_page()
    page.goto(f"{ui_stack.url}/#/backfills/{id}")
    page.locator('.live-indicator[data-mode="live"]').wait_for(timeout=8_000)
    wait_status(page, "COMPLETED_SUCCESS")
    page.wait_for_selector('.progress-percent:text("100%")')
    assert console.unexpected() == []


def test_the_launch_preview_says_what_would_wait_for_another_backfills_run(
    ui_stack: Stack, new_page: Callable[..., Any], console: ConsoleWatch
) -> None:
    first = launch(
        ui_stack,
        target={"job": "slow_rebuild"},
        partitions={"range": {"start": "2025-01-29", "end": "2025-01-31"}},
        reprocess="ALL",
        title="Waited for",
    )
    wait_until(lambda: backfill(ui_stack, first)["counts"]["running"] > 0, timeout=15)
    page = new_page()
    page.goto(f"{ui_stack.url}/#/launch?job=slow_rebuild&start=2025-01-29&end=2025-01-31")
    line = page.locator("#preview-waiting")
    line.wait_for(timeout=10_000)
    assert int(line.get_attribute("data-waiting") or 0) >= 1
    assert "would wait for another backfill's run" in line.inner_text()
    link = line.locator(f'a[data-waiting-backfill="{first}"]').first
    assert link.get_attribute("href") == f"#/backfills/{first}"
    shoot(page, "launch-preview-waiting")
    cancel = "mutation($id: ID!) { cancelBackfill(input: {id: $id}) { userErrors { code } } }"
    assert ui_stack.graphql(cancel, {"id": first})["cancelBackfill"]["userErrors"] == []
    assert console.unexpected() == []


def test_change_concurrency_and_priority_of_a_running_backfill(
    ui_stack: Stack, new_page: Callable[..., Any]
) -> None:
    id = launch(
        ui_stack,
        target={"job": "slow_rebuild"},
        partitions={"range": {"start": "2025-01-22", "end": "2025-01-31"}},
        maxConcurrentRuns=4,
        title="Slow me down",
    )
    page = new_page()
    page.goto(f"{ui_stack.url}/#/backfills/{id}")
    wait_status(page, "RUNNING")
    cap, priority = page.locator("#update-max-concurrent"), page.locator("#update-priority")
    expect(cap).to_have_value("4")
    expect(priority).to_have_value("0")
    cap.fill("1")
    priority.fill("5")
    page.locator('button[data-action="update"]').click()
    page.locator('.timeline-item[data-kind="UPDATED"]').wait_for()
    found = ui_stack.graphql(
        "query($id: ID!) { backfill(id: $id) { maxConcurrentRuns priority } }", {"id": id}
    )["backfill"]
    assert found == {"maxConcurrentRuns": 1, "priority": 5}
    # Bad input: the server's message, and nothing changes.
    cap.fill("0")
    page.locator('button[data-action="update"]').click()
    expect(page.locator("#update-error")).to_contain_text("between 1 and")
    again = ui_stack.graphql(
        "query($id: ID!) { backfill(id: $id) { maxConcurrentRuns } }", {"id": id}
    )["backfill"]
    assert again == {"maxConcurrentRuns": 1}
    stack_cancel = (
        "mutation($id: ID!) { cancelBackfill(input: { id: $id }) { userErrors { code } } }"
    )
    ui_stack.graphql(stack_cancel, {"id": id})
