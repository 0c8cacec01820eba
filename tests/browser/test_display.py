"""Time zones, dark mode, keyboard shortcuts and accessibility: axe-core (injected into each
page) finds no serious or critical violation on any page, light or dark. The screenshots of
each page, light and dark, are taken here: ``make screenshots`` writes them to
``docs/screenshots/`` (``BACKFILLER_SCREENSHOTS``)."""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.browser.conftest import Stack, shoot
from tests.browser.identity import NODE_DIR

pytestmark = pytest.mark.browser

AXE = NODE_DIR / "node_modules" / "axe-core" / "axe.min.js"


@pytest.fixture(scope="module")
def pages(ui_server: Stack) -> Iterator[dict[str, tuple[str, str]]]:
    """Every page of the UI: (route, a selector that is there once it has loaded)."""
    job_backfill = ui_server.launch(
        target={"job": "daily_sales"},
        partitions={"range": {"start": "2024-01-01", "end": "2024-01-31"}},
        title="January rerun",
        tags=[{"key": "ticket", "value": "DATA-42"}],
    )
    asset_backfill = ui_server.launch(
        target={"assets": {"names": ["daily_visits"], "upstream": True}},
        partitions={"range": {"start": "2024-02-01", "end": "2024-02-29"}},
    )
    yield {
        "backfills": ("#/backfills", "table tbody tr"),
        "backfill": (f"#/backfills/{job_backfill}", '#timeline-card[data-ready="true"]'),
        "asset-backfill": (f"#/backfills/{asset_backfill}", '.asset-graph[data-edges="1"]'),
        "launch": ("#/launch?job=daily_sales", "#preview-summary"),
        "launch-assets": ("#/launch?assets=raw_events&downstream=1", "#launch-asset-raw_events"),
        "jobs": ("#/jobs", ".job-card .strip-canvas"),
        "assets": ("#/assets", '.card[data-ready="true"] .asset-node'),
        "triggers": ("#/triggers", ".trigger-card"),
        "signin": ("#/signin", "#signin-token"),
    }


def axe_violations(page: Any) -> list[dict[str, Any]]:
    """axe-core's serious and critical violations of the page (WCAG 2.x A and AA rules)."""
    if not page.evaluate("typeof window.axe !== 'undefined'"):
        page.evaluate(AXE.read_text())  # through the debugger: the page's CSP does not apply
    found: list[dict[str, Any]] = page.evaluate(
        """async () => {
          const result = await axe.run(document, {runOnly: {type: 'tag',
            values: ['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa', 'best-practice']}});
          return result.violations.filter(v => v.impact === 'serious' || v.impact === 'critical')
            .map(v => ({id: v.id, impact: v.impact, help: v.help,
                        nodes: v.nodes.slice(0, 3).map(n => n.target.join(' '))}));
        }"""
    )
    return found


def screenshots_dir() -> Path | None:
    target = os.environ.get("BACKFILLER_SCREENSHOTS")
    return Path(target) if target else None


@pytest.mark.parametrize("scheme", ["light", "dark"])
def test_every_page_passes_axe_in_both_themes(
    ui_server: Stack,
    pages: dict[str, tuple[str, str]],
    browser: Any,
    scheme: str,
    new_page: Callable[..., Any],
) -> None:
    if not AXE.exists():
        pytest.fail("axe-core is missing: make bootstrap installs tests/browser/node")
    page = new_page()
    page.emulate_media(color_scheme=scheme)
    found: dict[str, list[dict[str, Any]]] = {}
    for name, (route, ready) in pages.items():
        page.goto(f"{ui_server.url}/{route}")
        page.wait_for_selector(ready)
        assert page.evaluate("document.documentElement.dataset.theme") == scheme
        violations = axe_violations(page)
        if violations:
            found[name] = violations
        path = shoot(page, f"{name}-{scheme}")
        if (target := screenshots_dir()) is not None:
            target.mkdir(parents=True, exist_ok=True)
            (target / f"{name}-{scheme}.png").write_bytes(path.read_bytes())
    summary = {name: sorted({f"{v['id']}: {v['nodes']}" for v in vs}) for name, vs in found.items()}
    assert summary == {}, "axe: serious or critical violations"


def test_time_zone_switch_is_remembered(
    ui_server: Stack, pages: dict[str, tuple[str, str]], browser: Any
) -> None:
    context = browser.new_context(timezone_id="America/New_York", locale="en-US")
    try:
        page = context.new_page()
        route, ready = pages["backfill"]
        page.goto(f"{ui_server.url}/{route}")
        page.wait_for_selector(ready)
        created = page.locator("dl.facts div", has_text="Created").locator("dd")
        assert re.search(r"\b(EST|EDT|GMT-[45])\b", created.inner_text()), created.inner_text()
        # The notes fill in as their parts load (the strip's with the partitions): waited for.
        page.locator(".zone-note", has_text="America/New_York").first.wait_for()
        page.locator("#strip-zone", has_text="the job's time zone, UTC").wait_for()
        page.locator("#zone-switch").click()
        page.locator("#zone-switch[aria-pressed=true]").wait_for()
        page.wait_for_selector(ready)
        assert (
            page.locator("dl.facts div", has_text="Created")
            .locator("dd")
            .inner_text()
            .endswith("UTC")
        )
        page.reload()  # remembered in this browser
        page.wait_for_selector(ready)
        assert (
            page.locator("dl.facts div", has_text="Created")
            .locator("dd")
            .inner_text()
            .endswith("UTC")
        )
        page.keyboard.press("t")  # the shortcut switches back
        page.locator("#zone-switch[aria-pressed=false]").wait_for()
        page.close()
    finally:
        context.close()


def test_dark_mode_follows_the_system_and_the_switch(
    ui_server: Stack, pages: dict[str, tuple[str, str]], new_page: Callable[..., Any]
) -> None:
    page = new_page()
    page.emulate_media(color_scheme="dark")
    route, ready = pages["backfills"]
    page.goto(f"{ui_server.url}/{route}")
    page.wait_for_selector(ready)
    background = "getComputedStyle(document.body).backgroundColor"
    assert page.evaluate("document.documentElement.dataset.theme") == "dark"
    dark = page.evaluate(background)
    page.locator("#theme-switch").click()
    assert page.evaluate("document.documentElement.dataset.theme") == "light"
    assert page.evaluate(background) != dark
    page.reload()
    page.wait_for_selector(ready)
    assert page.evaluate("document.documentElement.dataset.theme") == "light"  # remembered
    page.keyboard.press("d")
    assert page.evaluate("document.documentElement.dataset.theme") == "dark"


def test_keyboard_shortcuts_and_their_overlay(
    ui_server: Stack, pages: dict[str, tuple[str, str]], new_page: Callable[..., Any]
) -> None:
    page = new_page()
    route, ready = pages["backfill"]
    page.goto(f"{ui_server.url}/{route}")
    page.wait_for_selector(ready)
    page.keyboard.press("?")
    dialog = page.locator("dialog.shortcuts-dialog")
    dialog.wait_for()
    for keys in ("g b", "g l", "t", "d", "?", "p", "c", "l"):
        assert dialog.locator(f'tr[data-shortcut="{keys}"]').count() == 1, keys
    shoot(page, "shortcuts", full_page=False)
    assert page.evaluate("document.activeElement.textContent") == "Close"
    page.keyboard.press("Escape")
    dialog.wait_for(state="detached")
    page.keyboard.press("l")
    assert page.evaluate("document.activeElement.className") == "timeline-canvas"
    page.locator("main").focus()
    page.keyboard.press("p")  # pause, from the keyboard
    page.locator('h1 .badge[data-status="PAUSED"]').wait_for()
    page.keyboard.press("r")
    page.locator('h1 .badge[data-status="REQUESTED"], h1 .badge[data-status="RUNNING"]').wait_for()
    page.keyboard.press("g")
    page.keyboard.press("j")
    page.wait_for_url(re.compile(r".*#/jobs$"))
    # Focus is visible: the focused element has an outline. The Tab comes once the jobs page
    # has rendered, from its content: a Tab pressed while it renders lands outside <main>, and
    # the router then moves focus to <main> itself (main.js, navigated), which draws none.
    page.wait_for_selector(pages["jobs"][1])
    page.locator("main").focus()
    page.keyboard.press("Tab")
    outline = page.evaluate("getComputedStyle(document.activeElement).outlineStyle")
    assert outline not in ("", "none")


def test_the_launch_form_shows_only_what_applies(
    ui_server: Stack, new_page: Callable[..., Any]
) -> None:
    page = new_page()
    page.goto(f"{ui_server.url}/#/launch?job=daily_sales")
    page.wait_for_selector("#preview-summary")
    assert page.locator("#launch-assets-group").is_hidden()
    assert page.locator("#launch-job").is_visible()
    page.check("#launch-target-assets")
    page.locator("#launch-assets-group").wait_for()
    assert page.locator("#launch-job").is_hidden()
