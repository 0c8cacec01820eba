"""Pages that need no daemon: a 100,000-partition strip, form validation, narrow windows,
keyboard use, labels, sign-in on 401, and a server restart under an open page."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import time
from collections.abc import Callable
from datetime import UTC, date, datetime, timedelta
from typing import Any

import httpx
import pytest
from sqlalchemy import create_engine, insert, update

from backfiller import domain
from backfiller.ids import parse_backfill_id
from backfiller.storage.records import BackfillRecord, SlotRecord
from tests.browser.conftest import (
    DEFINITIONS,
    ConsoleWatch,
    Stack,
    _Databases,
    held_until,
    record,
    shoot,
    wait_until,
)
from tests.support import LAUNCH, REPO, LiveProcess, LiveServer, answers

pytestmark = pytest.mark.browser

HUGE = 100_000
FIRST_DAY = date(1750, 1, 1)


def day(index: int) -> str:
    return (FIRST_DAY + timedelta(days=index)).isoformat()


def launch(stack: Stack, **input: Any) -> str:
    data = stack.graphql(LAUNCH, {"input": input})
    assert data["launchBackfill"]["userErrors"] == []
    return str(data["launchBackfill"]["backfill"]["id"])


def seed_progress(database_url: str, backfill_id: str, planned: int) -> dict[str, int]:
    """Write the slots of a backfill that is part way through, as the daemon would leave them:
    skipped, then succeeded with a failure every 37 partitions, then running, then queued;
    the rest is not planned yet (pending). Counters are kept to add up to the total."""
    pk = parse_backfill_id(backfill_id)
    assert pk is not None
    now = datetime.now(UTC)
    states: list[tuple[domain.SlotState, str | None]] = []
    for position in range(planned):
        if position < 500:
            states.append((domain.SlotState.SKIPPED, domain.SkipReason.ALREADY_SUCCEEDED.value))
        elif position < planned - 101:
            failed = position % 37 == 0
            states.append((domain.SlotState.FAILED if failed else domain.SlotState.SUCCEEDED, None))
        elif position < planned - 93:
            states.append((domain.SlotState.RUNNING, None))
        else:
            states.append((domain.SlotState.QUEUED, None))
    counts = {s.value: 0 for s in domain.SlotState}
    for state, _ in states:
        counts[state.value] += 1
    counts["pending"] = HUGE - planned
    engine = create_engine(database_url)
    with engine.begin() as conn:
        conn.execute(
            insert(SlotRecord),
            [
                {
                    "backfill_id": pk,
                    "position": position,
                    "partition_key": day(position),
                    "status": state,
                    "attempts": 0 if state is domain.SlotState.SKIPPED else 1,
                    "skip_reason": reason,
                    "updated_at": now,
                }
                for position, (state, reason) in enumerate(states)
            ],
        )
        conn.execute(
            update(BackfillRecord)
            .where(BackfillRecord.id == pk)
            .values(
                status=domain.BackfillState.RUNNING,
                started_at=now,
                planned=planned,
                **counts,
            )
        )
    engine.dispose()
    assert sum(counts.values()) == HUGE
    return counts


def test_a_100000_partition_backfill_draws_its_strip(
    ui_server: Stack, new_page: Callable[..., Any]
) -> None:
    id = launch(
        ui_server,
        target={"job": "weather_history"},
        partitions={"range": {"start": day(0), "end": day(HUGE - 1)}},
        title="Weather history, 100,000 days",
    )
    counts = seed_progress(ui_server.database_url, id, planned=60_101)

    page = new_page()
    page.goto(f"{ui_server.url}/#/backfills")  # modules loaded and cached, as for a user
    page.wait_for_selector("table")
    started = time.perf_counter()
    page.goto(f"{ui_server.url}/#/backfills/{id}")
    page.wait_for_selector('.strip-holder[data-ready="true"]', timeout=30_000)
    elapsed = time.perf_counter() - started
    canvas = page.locator(".strip-canvas")
    ranges = int(str(canvas.get_attribute("data-drawn-ranges")))
    timing = page.locator(".strip-timing").inner_text()
    record(
        "strip-timing",
        f"100,000-partition backfill page: strip ready {elapsed * 1000:.0f} ms after "
        f"navigation ({ranges} status ranges; in page: {timing})",
    )
    assert canvas.get_attribute("data-total") == str(HUGE)
    assert page.locator('[data-count="failed"] dd').inner_text() == f"{counts['failed']:,}"
    assert page.locator('.legend [data-status="PENDING"] strong').inner_text() == "39,899"
    shoot(page, "backfill-100k")

    # Hovering names a partition and its status.
    box = canvas.bounding_box()
    assert box is not None
    page.mouse.move(box["x"] + box["width"] * 0.3, box["y"] + box["height"] / 2)
    tooltip = page.locator(".strip-tooltip")
    tooltip.wait_for()
    assert "of 100,000" in tooltip.inner_text()
    shoot(page, "backfill-100k-hover", full_page=False)
    page.mouse.move(0, 0)

    # The keyboard reaches any partition; its key is named even inside a folded range.
    canvas.focus()
    page.keyboard.press("Home")
    for _ in range(70):  # PageDown moves 1% (1,000 partitions)
        page.keyboard.press("PageDown")
    page.keyboard.press("ArrowRight")
    expected = day(70_001)  # inside the pending tail: one range of 39,899 partitions
    tooltip.filter(has_text=expected).wait_for()
    assert "Pending" in tooltip.inner_text()
    page.keyboard.press("Enter")
    panel = page.locator(".partition-panel")
    panel.locator(f"h3:text('Partition {expected}')").wait_for()
    panel.locator("text=No run of this partition yet.").wait_for()

    # A failed partition in the middle of the succeeded ones: 37 * 1000 is a failure.
    page.keyboard.press("Home")
    for _ in range(37):
        page.keyboard.press("PageDown")
    tooltip.filter(has_text=day(37_000)).wait_for()
    assert "Failed" in tooltip.inner_text()


def test_launch_form_shows_validation_errors(
    ui_server: Stack, new_page: Callable[..., Any]
) -> None:
    page = new_page()
    page.goto(f"{ui_server.url}/#/launch?job=region_report")
    # As a person would: once the job has loaded (its description moves the form down).
    page.locator("#launch-job-help .muted").wait_for()
    page.check("#launch-mode-keys")
    page.fill("#launch-keys", "emea\namer")
    page.locator("#preview-summary").filter(has_text="2 runs").wait_for()

    page.fill("#launch-run-config", '{"currency": ')
    error = page.locator("#launch-run-config-error")
    error.filter(has_text="Not valid JSON").wait_for()
    assert page.get_attribute("#launch-run-config", "aria-invalid") == "true"

    page.fill("#launch-run-config", '{"currency": "GBP"}')
    error.filter(has_text="GBP").wait_for()  # the server's INVALID_RUN_CONFIG, on the field
    shoot(page, "launch-errors")
    page.click("#launch-submit")
    error.filter(has_text="GBP").wait_for()
    assert "#/launch" in page.url

    page.fill("#launch-run-config", '{"currency": "EUR"}')
    page.fill("#launch-keys", "emea\nnowhere")
    page.locator("#launch-keys-error").filter(has_text="nowhere").wait_for()
    assert error.is_hidden()

    page.fill("#launch-keys", "emea")
    page.locator("#preview-summary").filter(has_text="1 run,").wait_for()
    assert page.locator("#launch-keys-error").is_hidden()


def test_dates_typed_while_the_job_loads_are_kept(
    ui_server: Stack, new_page: Callable[..., Any]
) -> None:
    # The job's details answer late (held here): the range the user typed meanwhile must win
    # over the job's suggested range, and the preview must be of what the user typed.
    page = new_page()
    held: list[Any] = []

    def hold(route: Any) -> None:
        if not held and "UiJobForLaunch" in (route.request.post_data or ""):
            held.append(route)
        else:
            route.continue_()

    page.route("**/graphql/v1", hold)
    page.goto(f"{ui_server.url}/#/launch?job=daily_sales")
    held_until(page, held)
    page.fill("#launch-start", "2024-03-01")
    page.fill("#launch-end", "2024-03-05")
    held[0].continue_()
    page.locator("#preview-summary").filter(has_text="5 runs").wait_for()
    assert page.input_value("#launch-start") == "2024-03-01"
    assert page.input_value("#launch-end") == "2024-03-05"


def test_every_control_is_labelled_and_narrow_windows_do_not_scroll_sideways(
    ui_server: Stack, new_page: Callable[..., Any]
) -> None:
    id = launch(
        ui_server,
        target={"job": "daily_sales"},
        partitions={"range": {"start": "2024-01-01", "end": "2024-01-31"}},
        title="January rerun",
        tags=[{"key": "ticket", "value": "DATA-42"}],
    )
    asset_backfill = launch(
        ui_server,
        target={"assets": {"names": ["daily_visits"], "upstream": True, "downstream": True}},
        partitions={"range": {"start": "2024-02-01", "end": "2024-02-29"}},
    )
    unlabelled = """() => [...document.querySelectorAll('input, select, textarea, button, canvas')]
      .filter(el => !(el.labels && el.labels.length) && !el.getAttribute('aria-label')
        && !el.getAttribute('aria-labelledby') && !(el.textContent || '').trim())
      .map(el => el.outerHTML.slice(0, 80))"""
    overflow = "() => document.documentElement.scrollWidth - window.innerWidth"
    routes = {
        "backfills": ("#/backfills", "table tbody tr"),
        "backfill": (f"#/backfills/{id}", '.strip-holder[data-ready="true"]'),
        "launch": ("#/launch?job=daily_sales", "#preview-summary"),
        "jobs": ("#/jobs", ".job-card .strip-canvas"),
        "triggers": ("#/triggers", ".trigger-card"),
        "assets": ("#/assets", '.card[data-ready="true"] .asset-node'),
        "asset-backfill": (f"#/backfills/{asset_backfill}", '.asset-graph[data-edges="4"]'),
        "launch-assets": ("#/launch?assets=raw_events&downstream=1", "#launch-asset-raw_events"),
    }
    for width in (1280, 390):
        page = new_page(width=width, height=844)
        for name, (route, ready) in routes.items():
            page.goto(f"{ui_server.url}/{route}")
            page.wait_for_selector(ready)
            assert page.evaluate(unlabelled) == [], name
            assert page.evaluate(overflow) <= 0, f"{name} scrolls sideways at {width}px"
            if width < 500 and name in ("backfills", "backfill", "launch", "asset-backfill"):
                shoot(page, f"narrow-{name}")

    # Keyboard only: Tab from the top reaches the navigation and opens a page with Enter.
    page = new_page()
    page.goto(f"{ui_server.url}/#/backfills")
    page.wait_for_selector("table tbody tr")
    page.keyboard.press("Tab")  # skip link
    page.keyboard.press("Tab")  # brand
    page.keyboard.press("Tab")  # Backfills
    page.keyboard.press("Tab")  # Launch
    assert page.evaluate("document.activeElement.textContent") == "Launch"
    page.keyboard.press("Enter")
    wait_until(lambda: page.evaluate("() => document.activeElement.id") == "main", timeout=15)
    assert page.locator("#launch-job").is_visible()


def test_sign_in_page_appears_when_the_api_answers_401(
    ui_databases: _Databases, new_page: Callable[..., Any], console: ConsoleWatch
) -> None:
    url = ui_databases.new("auth")
    created = subprocess.run(
        [
            *(sys.executable, "-m", "backfiller", "token", "create", "--name", "ui-test"),
            *("--role", "operator", "--database", url, "--json"),
        ],
        cwd=REPO,
        capture_output=True,
        text=True,
        check=True,
    )
    token = json.loads(created.stdout)["token"]
    server = LiveServer(url, DEFINITIONS, auth="token")
    console.allow(r"401 \(Unauthorized\)")
    try:
        page = new_page()
        page.goto(f"{server.url}/#/jobs")
        page.wait_for_url(lambda url: "#/signin?next=" in url)
        page.locator("#signin-token").wait_for()
        shoot(page, "signin")
        page.fill("#signin-token", "not-a-token")
        page.click("#signin-form button[type=submit]")
        page.locator("#signin-error").filter(has_text="refused").wait_for()
        page.fill("#signin-token", token)
        page.click("#signin-form button[type=submit]")
        page.wait_for_url("**/#/jobs")
        page.locator(".job-card").first.wait_for()
        assert page.evaluate("sessionStorage.getItem('backfiller.token')") == token
        page.click("text=Sign out")
        page.wait_for_url(lambda url: "#/signin?next=" in url)
        page.close()
    finally:
        server.stop()


def test_a_server_restart_under_an_open_page_recovers_without_reloading(
    ui_databases: _Databases, new_page: Callable[..., Any], console: ConsoleWatch
) -> None:
    url = ui_databases.new("restart")
    args = ["--definitions", DEFINITIONS, "--auth", "none"]
    server = LiveServer(url, DEFINITIONS)
    port = server.port
    # The server going away: refused, empty or reset (a request in flight as it stops).
    console.allow(r"ERR_CONNECTION_REFUSED|ERR_CONNECTION_RESET|ERR_EMPTY_RESPONSE|503|502")
    restarted: LiveProcess | None = None
    try:
        page = new_page()
        loads: list[str] = []
        page.on("load", lambda: loads.append(page.url))
        page.goto(f"{server.url}/#/backfills")
        page.locator(".empty").wait_for()

        server.stop()
        banner = page.locator("#banner")
        banner.filter(has_text="Connection lost").wait_for(timeout=20_000)
        shoot(page, "connection-lost", full_page=False)

        restarted = LiveProcess(
            ["serve", "--database", url, "--host", "127.0.0.1", "--port", str(port), *args]
        )
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            if answers(f"{server.url}/healthz"):
                break
            time.sleep(0.2)
        launched = httpx.post(
            f"{server.url}/graphql/v1",
            json={
                "query": LAUNCH,
                "variables": {
                    "input": {
                        "target": {"job": "daily_sales"},
                        "partitions": {"keys": ["2024-01-05"]},
                        "title": "After the restart",
                    }
                },
            },
            timeout=10,
        ).json()
        assert launched["data"]["launchBackfill"]["userErrors"] == []
        banner.filter(has_text="Reconnected").wait_for(timeout=30_000)
        page.locator("text=After the restart").wait_for(timeout=30_000)
        assert loads == [f"{server.url}/#/backfills"], "the page reloaded"
    finally:
        server.stop()
        if restarted is not None:
            restarted.stop()


def test_user_errors_show_next_to_the_button(
    ui_server: Stack, new_page: Callable[..., Any]
) -> None:
    id = launch(
        ui_server,
        target={"job": "daily_sales"},
        partitions={"range": {"start": "2024-02-01", "end": "2024-02-05"}},
        title="Canceled behind the page's back",
    )
    page = new_page()
    # The page must keep showing the backfill as it was: no polling (the clock stands still)
    # and no live update (its subscription's socket reaches nothing; otherwise the server's
    # next push could disable the button before the click).
    page.clock.install()
    page.route_web_socket(re.compile(r".*/graphql.*"), lambda socket: None)
    page.goto(f"{ui_server.url}/#/backfills/{id}")
    pause = page.locator('button[data-action="pause"]')
    pause.wait_for()
    assert not pause.is_disabled()
    cancel = "mutation($id: ID!) { cancelBackfill(input: {id: $id}) { userErrors { code } } }"
    assert ui_server.graphql(cancel, {"id": id})["cancelBackfill"]["userErrors"] == []

    pause.click()
    error = page.locator("#pause-error")
    error.filter(has_text="cannot pause a backfill that is CANCELED").wait_for()
    page.locator('h1 .badge[data-status="CANCELED"]').wait_for()  # and the page catches up
    shoot(page, "user-error", full_page=False)
