"""Browser tests: Debian's headless Chromium driven by Playwright, against live processes.

Two stacks run for the whole session, each on its own database:

- ``ui_server``: the API and UI alone (no daemon), for pages whose data the tests write;
- ``ui_stack``: the API and UI plus ``backfiller daemon``, for backfills that really run.

Every page gets a fresh browser context; any console error or uncaught exception fails the test.
Screenshots go to ``test-artifacts/screenshots/`` (gitignored); ``docs/screenshots/`` holds the
committed copies shown in the README.
"""

from __future__ import annotations

import os
import re
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import create_engine, text
from sqlalchemy.engine import make_url

from backfiller.storage.migrations import upgrade_database
from tests.support import LAUNCH, REPO, LiveProcess, LiveServer

CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
DEFINITIONS = "tests.browser.ui_defs:definitions"
ARTIFACTS = REPO / "test-artifacts"
SCREENSHOTS = ARTIFACTS / "screenshots"
PG_ENV = "BACKFILLER_TEST_DATABASE_URL"


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    """Headless Chromium from Debian; the tests skip when it is not installed.

    Module-scoped: Playwright's sync API runs an event loop while it is started, which would
    stop the asyncio tests of other modules in the same session from running theirs.
    """
    if not CHROMIUM.exists():
        pytest.skip(
            f"{CHROMIUM} is missing: install Debian's chromium (apt-get install -y chromium)"
        )
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        chromium = playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        yield chromium
        chromium.close()


class _Databases:
    """Fresh, migrated databases for live processes: SQLite files, or PostgreSQL databases
    created beside ``BACKFILLER_TEST_DATABASE_URL`` and dropped at the end."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.created: list[str] = []
        base = os.environ.get(PG_ENV)
        self.admin_url = make_url(base).set(drivername="postgresql+psycopg") if base else None

    def new(self, label: str) -> str:
        if self.admin_url is None:
            url = f"sqlite:///{self.root / f'{label}.db'}"
        else:
            name = f"bf_ui_{label}_{uuid.uuid4().hex[:8]}"
            admin = create_engine(self.admin_url, isolation_level="AUTOCOMMIT")
            with admin.connect() as conn:
                conn.execute(text(f'CREATE DATABASE "{name}"'))
            admin.dispose()
            self.created.append(name)
            url = self.admin_url.set(database=name).render_as_string(hide_password=False)
        upgrade_database(url)
        return url

    def drop_all(self) -> None:
        if self.admin_url is None or not self.created:
            return
        admin = create_engine(self.admin_url, isolation_level="AUTOCOMMIT")
        with admin.connect() as conn:
            for name in self.created:
                conn.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
        admin.dispose()


@pytest.fixture(scope="session")
def ui_databases(tmp_path_factory: pytest.TempPathFactory) -> Iterator[_Databases]:
    databases = _Databases(tmp_path_factory.mktemp("ui-db"))
    yield databases
    databases.drop_all()


@pytest.fixture(scope="session")
def ui_test_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The directory ``ui_defs`` reads (``fixed`` makes flaky_export succeed)."""
    return tmp_path_factory.mktemp("ui-jobs")


class Stack:
    """A live server (and maybe a daemon) on one database."""

    def __init__(self, database_url: str, server: LiveServer, daemon: LiveProcess | None):
        self.database_url = database_url
        self.server = server
        self.daemon = daemon
        self.url = server.url

    def graphql(self, query: str, variables: dict[str, Any] | None = None) -> Any:
        response = self.server.graphql(query, variables)
        assert response.status_code == 200, response.text
        body = response.json()
        assert "errors" not in body, body
        return body["data"]

    def launch(self, **input: Any) -> str:
        """Launch a backfill through the API; its id."""
        data = self.graphql(LAUNCH, {"input": input})
        assert data["launchBackfill"]["userErrors"] == [], data
        return str(data["launchBackfill"]["backfill"]["id"])

    def stop(self) -> None:
        if self.daemon is not None:
            self.daemon.stop()
        self.server.stop()


def _env(test_dir: Path) -> dict[str, str]:
    return {"BACKFILLER_UI_TEST_DIR": str(test_dir)}


@pytest.fixture(scope="session")
def ui_server(ui_databases: _Databases, ui_test_dir: Path) -> Iterator[Stack]:
    """API and UI without a daemon: nothing runs unless a test writes it."""
    url = ui_databases.new("server")
    server = LiveServer(url, DEFINITIONS, auth="none", env=_env(ui_test_dir))
    stack = Stack(url, server, None)
    yield stack
    stack.stop()


@pytest.fixture(scope="session")
def ui_stack(ui_databases: _Databases, ui_test_dir: Path) -> Iterator[Stack]:
    """API and UI plus ``backfiller daemon`` on the same database: backfills really run."""
    url = ui_databases.new("stack")
    server = LiveServer(url, DEFINITIONS, auth="none", env=_env(ui_test_dir))
    daemon = LiveProcess(
        ["daemon", "--database", url, "--definitions", DEFINITIONS, "--workers", "2"],
        env=_env(ui_test_dir),
    )
    stack = Stack(url, server, daemon)
    yield stack
    stack.stop()


class ConsoleWatch:
    """Console errors and uncaught exceptions of one page."""

    def __init__(self) -> None:
        self.errors: list[str] = []
        self.allowed: list[re.Pattern[str]] = []

    def allow(self, pattern: str) -> None:
        self.allowed.append(re.compile(pattern))

    def record(self, text: str) -> None:
        self.errors.append(text)

    def unexpected(self) -> list[str]:
        return [e for e in self.errors if not any(p.search(e) for p in self.allowed)]


@pytest.fixture
def console() -> ConsoleWatch:
    return ConsoleWatch()


@pytest.fixture
def new_page(browser: Any, console: ConsoleWatch) -> Iterator[Callable[..., Any]]:
    """Open pages in fresh contexts; fails the test on any console error."""
    contexts: list[Any] = []

    def open_page(width: int = 1280, height: int = 900) -> Any:
        context = browser.new_context(viewport={"width": width, "height": height})
        context.set_default_timeout(15_000)
        contexts.append(context)
        page = context.new_page()
        page.on(
            "console",
            lambda m: console.record(f"console.{m.type}: {m.text}") if m.type == "error" else None,
        )
        page.on("pageerror", lambda e: console.record(f"uncaught: {e}"))
        return page

    yield open_page
    for context in contexts:
        context.close()
    assert console.unexpected() == [], "console errors in the browser"


def shoot(page: Any, name: str, full_page: bool = True) -> Path:
    """Save a screenshot as a test artifact."""
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    path = SCREENSHOTS / f"{name}.png"
    # From the top, so that the sticky header is drawn where a person sees it.
    page.evaluate("window.scrollTo(0, 0)")
    page.screenshot(path=str(path), full_page=full_page)
    return path


def record(name: str, line: str) -> None:
    """Print a measured figure and keep it under test-artifacts/."""
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    with (ARTIFACTS / f"{name}.txt").open("a") as f:
        f.write(line + "\n")
    print(line)


def wait_until(predicate: Callable[[], Any], timeout: float = 60, interval: float = 0.25) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError("condition not met in time")
        time.sleep(interval)


def held_until(page: Any, held: list[Any], timeout: float = 15) -> Any:
    """Wait for a route handler to hold a request; the first one held.

    Playwright's synchronous API calls route handlers only while one of its own calls has
    control, so this waits through the page (``wait_for_timeout``), never ``time.sleep``.
    """
    deadline = time.monotonic() + timeout
    while not held:
        if time.monotonic() > deadline:
            raise AssertionError("the page sent no request that the route holds")
        page.wait_for_timeout(100)
    return held[0]
