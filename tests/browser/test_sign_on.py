"""Single sign-on in a real browser against a real OpenID provider (oidc-provider under Node):
sign in, act within the mapped role and be refused outside it, sign out, an ended session
refused, a tampered ``state`` or ``nonce`` refused, an answer from another issuer refused,
the provider's keys rotated; API tokens keep working beside sessions."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlencode, urlsplit

import httpx
import pytest
from sqlalchemy import create_engine, select, update
from websockets.exceptions import InvalidStatus
from websockets.sync.client import connect as ws_connect
from websockets.typing import Subprotocol

from backfiller.storage.auth_records import AuditRecord
from backfiller.storage.records import BackfillRecord
from backfiller.storage.web_sessions import WebSessionRecord
from tests.browser.conftest import DEFINITIONS, ConsoleWatch, _Databases, shoot
from tests.browser.identity import CLIENT_SECRET, IdentityProvider, new_key, oidc_args
from tests.browser.test_display import axe_violations
from tests.support import REPO, LiveProcess, LiveServer, free_port

pytestmark = pytest.mark.browser


class SsoStack:
    def __init__(self, database_url: str, tmp: Path) -> None:
        self.database_url = database_url
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.key_a, self.key_b = new_key("key-a"), new_key("key-b")
        self.provider = IdentityProvider(self.url, [self.key_a])
        self.other = IdentityProvider(self.url, [new_key("other")])  # another issuer
        secret = tmp / "client-secret"
        secret.write_text(CLIENT_SECRET + "\n")
        self.server = self._serve(oidc_args(self.provider.issuer, secret))

    def _serve(self, extra: list[str]) -> LiveProcess:
        server = LiveProcess(
            [
                *("serve", "--database", self.database_url, "--definitions", DEFINITIONS),
                *("--host", "127.0.0.1", "--port", str(self.port), "--auth", "token"),
                *extra,
            ]
        )
        server.url = self.url  # type: ignore[attr-defined]  # what wait_ready reads
        LiveServer.wait_ready(server)  # type: ignore[arg-type]
        return server

    def rotate_keys(self) -> None:
        """The provider restarts signing with a new key (the old one still published)."""
        port = self.provider.port
        self.provider.stop()
        self.provider = IdentityProvider(self.url, [self.key_b, self.key_a], port=port)

    def stop(self) -> None:
        self.server.stop()
        self.provider.stop()
        self.other.stop()


@pytest.fixture(scope="module")
def sso(ui_databases: _Databases, tmp_path_factory: pytest.TempPathFactory) -> Iterator[SsoStack]:
    stack = SsoStack(ui_databases.new("sso"), tmp_path_factory.mktemp("sso"))
    yield stack
    stack.stop()


@pytest.fixture
def sso_page(new_page: Callable[..., Any], console: ConsoleWatch) -> Callable[..., Any]:
    """A page for these tests: the sign-in page appears on a 401, which the browser logs as a
    failed load; the provider's development pages import a web font from the internet, which
    is answered here with an empty style sheet (no traffic leaves the machine)."""
    console.allow(r"status of 401")

    def open_page() -> Any:
        page = new_page()
        page.context.route(
            "https://fonts.googleapis.com/**",
            lambda route: route.fulfill(body="", content_type="text/css"),
        )
        return page

    return open_page


def sign_in(page: Any, sso: SsoStack, login: str, start: str = "#/backfills") -> None:
    page.goto(f"{sso.url}/{start}")
    page.locator("#signin-sso").click()
    fill_provider_login(page, login)


def fill_provider_login(page: Any, login: str) -> None:
    """oidc-provider's development sign-in page: any login, any password."""
    page.locator("input[name=login]").fill(login)
    page.locator("input[name=password]").fill("anything")
    page.locator("button[type=submit]").click()


def session_rows(sso: SsoStack) -> list[Any]:
    engine = create_engine(sso.database_url)
    try:
        with engine.connect() as conn:
            return list(conn.execute(select(WebSessionRecord)).all())
    finally:
        engine.dispose()


def test_sign_in_act_within_the_role_and_sign_out(
    sso: SsoStack, sso_page: Callable[..., Any]
) -> None:
    page = sso_page()
    page.goto(f"{sso.url}/#/launch?job=daily_sales")
    page.wait_for_url(lambda url: "#/signin?next=" in url)
    page.locator("#signin-sso").wait_for()
    assert axe_violations(page) == []
    shoot(page, "signin-sso")
    page.locator("#signin-sso").click()
    fill_provider_login(page, "olga")
    page.wait_for_url(re.compile(r".*#/launch\?job=daily_sales$"))
    person = page.locator("#session-person")
    person.filter(has_text="olga@example.com").wait_for()
    assert "operator" in person.inner_text() and "sales" in person.inner_text()

    # The cookie: Secure, HttpOnly, SameSite=Strict, not readable by the page.
    cookies = {c["name"]: c for c in page.context.cookies()}
    cookie = cookies["__Host-backfiller-session"]
    assert (cookie["secure"], cookie["httpOnly"], cookie["sameSite"]) == (True, True, "Strict")
    assert "backfiller-session" not in page.evaluate("document.cookie")

    # An operator launches a job of their scope ...
    page.locator("#preview-summary").wait_for()
    page.locator("#launch-submit").click()
    page.wait_for_url(re.compile(r".*#/backfills/bf_\d+$"))
    backfill_id = page.url.rsplit("/", 1)[1]
    page.locator('button[data-action="cancel"]').wait_for()
    # Live updates reach a session too: its WebSocket carries the session's CSRF token.
    page.locator('.live-indicator[data-mode="live"]').wait_for()
    # ... and the audit log and the backfill name the person.
    engine = create_engine(sso.database_url)
    with engine.connect() as conn:
        actors = conn.execute(
            select(AuditRecord.actor).where(AuditRecord.operation == "launchBackfill")
        ).scalars()
        assert "olga@example.com" in list(actors)
        # The launch acts for the person's team (the team claim), as a token's would.
        team = conn.execute(
            select(BackfillRecord.team).where(BackfillRecord.id == int(backfill_id[3:]))
        ).scalar_one()
        assert team == "sales"
    engine.dispose()
    page.locator(".lede").filter(has_text="by olga@example.com").wait_for()

    # The list finds it by the person's team (a deep link), and not by another team.
    page.goto(f"{sso.url}/#/backfills?team=sales")
    page.locator(f'tr[data-id="{backfill_id}"]').wait_for()
    assert page.input_value("#filter-team") == "sales"
    page.fill("#filter-team", "web")
    page.keyboard.press("Enter")
    page.wait_for_url(re.compile(r".*team=web"))
    page.locator("text=No backfill matches these filters.").wait_for()

    # Outside the role: an operator may not manage tokens; outside the scope: another job.
    denied = page.evaluate(
        """async () => {
            const r = await fetch('/graphql/v1', {method: 'POST', headers: {
              'Content-Type': 'application/json',
              'X-CSRF-Token': (await (await fetch('/auth/session')).json()).csrfToken},
              body: JSON.stringify({query: '{ apiTokens { nodes { id } } }'})});
            return await r.json();
        }"""
    )
    assert denied["errors"][0]["extensions"]["code"] == "FORBIDDEN"
    page.goto(f"{sso.url}/#/launch?job=region_report")
    page.locator("#launch-job-help .muted").wait_for()  # loaded: the form no longer moves
    page.locator("#launch-mode-all").check()
    page.locator("#launch-submit").click()
    page.locator("#launch-job-error").filter(
        has_text="may not launch job 'region_report'"
    ).wait_for()

    # Sign out: the session ends on the server too, and the page asks to sign in again. Its
    # live updates stop first: a socket opened once the session is over would be refused.
    page.goto(f"{sso.url}/#/backfills/{backfill_id}")
    page.locator('.live-indicator[data-mode="live"]').wait_for()
    opened: list[str] = []
    page.on("websocket", lambda socket: opened.append(socket.url))

    def slow_provider(route: Any) -> None:  # the page stays 2 s: longer than a reconnect's wait
        time.sleep(2)
        route.continue_()

    page.route(
        lambda url: "session/end" in url or ("logout" in url and "/auth/" not in url), slow_provider
    )
    page.locator("#sign-out").click()
    page.wait_for_url(lambda url: "signedOut" in url or "session/end" in url or "logout" in url)
    assert opened == []
    ended = [r for r in session_rows(sso) if r.name == "olga@example.com"]
    assert ended and all(r.ended_at is not None for r in ended)
    page.goto(f"{sso.url}/#/jobs")
    page.locator("#signin-sso").wait_for()


def authorization_redirect(
    page: Any, sso: SsoStack, change: Callable[[dict[str, str]], str]
) -> None:
    """Sign in with the server's redirect to the provider's authorization endpoint changed by
    ``change`` (its query parameters in, the URL to go to instead out). Playwright cannot
    route a redirected request, so the server's own answer (``/auth/login``) is changed."""

    def tamper(route: Any) -> None:
        answer = route.fetch(max_redirects=0)
        location = answer.headers["location"]
        params = {k: v[0] for k, v in parse_qs(urlsplit(location).query).items()}
        headers = {**answer.headers, "location": change(params)}
        route.fulfill(status=answer.status, headers=headers, body=b"")

    page.route(re.compile(re.escape(sso.url) + r"/auth/login"), tamper)


@pytest.mark.parametrize(
    ("what", "refusal"),
    [
        ("state", "unknown or was already used"),
        ("nonce", "nonce"),
        ("issuer", "came from another issuer"),
    ],
)
def test_a_tampered_answer_is_refused(
    sso: SsoStack, sso_page: Callable[..., Any], what: str, refusal: str
) -> None:
    page = sso_page()

    def change(params: dict[str, str]) -> str:
        params = dict(params)
        base = sso.provider.issuer
        if what == "issuer":
            base = sso.other.issuer  # the same request, answered by another provider
        else:
            params[what] = params[what][:-4] + "AAAA"
        return f"{base}/auth?{urlencode(params)}"

    authorization_redirect(page, sso, change)
    page.goto(f"{sso.url}/#/jobs")
    page.locator("#signin-sso").click()
    fill_provider_login(page, "alice")
    page.locator("#signin-refused").filter(has_text=refusal).wait_for()
    assert "alice@example.com" not in [r.name for r in session_rows(sso) if r.ended_at is None]
    assert "__Host-backfiller-session" not in {c["name"] for c in page.context.cookies()}
    shoot(page, f"signin-refused-{what}", full_page=False)


def test_a_person_without_a_role_is_refused(sso: SsoStack, sso_page: Callable[..., Any]) -> None:
    page = sso_page()
    sign_in(page, sso, "nobody")
    page.locator("#signin-refused").filter(has_text="has no role on this server").wait_for()


def test_a_viewer_reads_and_is_refused_a_launch(
    sso: SsoStack, sso_page: Callable[..., Any]
) -> None:
    page = sso_page()
    sign_in(page, sso, "victor", start="#/launch?job=daily_sales")
    page.wait_for_url(re.compile(r".*#/launch\?job=daily_sales$"))
    page.locator("#session-person").filter(has_text="viewer").wait_for()
    page.locator("#launch-submit").click()
    page.locator("#launch-form-error").filter(has_text="needs the operator role").wait_for()
    assert "#/launch" in page.url  # nothing launched


def test_an_ended_or_expired_session_is_refused(
    sso: SsoStack, sso_page: Callable[..., Any]
) -> None:
    page = sso_page()
    sign_in(page, sso, "alice")
    page.locator("#session-person").filter(has_text="admin").wait_for()
    csrf = page.evaluate("fetch('/auth/session').then(r => r.json()).then(b => b.csrfToken)")
    cookie = {c["name"]: c["value"] for c in page.context.cookies()}["__Host-backfiller-session"]
    query = {"query": "{ apiVersion }"}
    jar = {"Cookie": f"__Host-backfiller-session={cookie}"}
    ok = httpx.post(f"{sso.url}/graphql/v1", json=query, headers={**jar, "X-CSRF-Token": csrf})
    assert ok.status_code == 200, ok.text
    # Without the CSRF token (what a page of another site would send): refused.
    assert httpx.post(f"{sso.url}/graphql/v1", json=query, headers=jar).status_code == 401
    # From another origin: refused.
    evil = {**jar, "X-CSRF-Token": csrf, "Origin": "http://evil.example"}
    assert httpx.post(f"{sso.url}/graphql/v1", json=query, headers=evil).status_code == 403
    # A WebSocket: with the session's CSRF token in its URL, accepted; without it, refused.
    socket_url = f"{sso.url.replace('http', 'ws')}/graphql/v1"
    protocol = [Subprotocol("graphql-transport-ws")]
    with ws_connect(
        f"{socket_url}?csrf={csrf}", additional_headers=jar, subprotocols=protocol
    ) as ws:
        ws.send(json.dumps({"type": "connection_init", "payload": {}}))
        assert json.loads(ws.recv(timeout=10))["type"] == "connection_ack"
    with pytest.raises(InvalidStatus):
        ws_connect(socket_url, additional_headers=jar, subprotocols=protocol).close()

    engine = create_engine(sso.database_url)
    with engine.begin() as conn:
        conn.execute(
            update(WebSessionRecord)
            .where(
                WebSessionRecord.name == "alice@example.com", WebSessionRecord.ended_at.is_(None)
            )
            .values(expires_at=datetime.now(UTC) - timedelta(seconds=1))
        )
    engine.dispose()
    expired = httpx.post(f"{sso.url}/graphql/v1", json=query, headers={**jar, "X-CSRF-Token": csrf})
    assert expired.status_code == 401
    page.goto(f"{sso.url}/#/triggers")
    page.locator("#session-ended").wait_for()
    page.locator("#signin-sso").wait_for()


def test_keys_rotated_by_the_provider_and_tokens_beside_sessions(
    sso: SsoStack, sso_page: Callable[..., Any]
) -> None:
    page = sso_page()
    sign_in(page, sso, "alice")
    page.locator("#session-person").wait_for()
    sso.rotate_keys()  # the next ID token is signed with a key the server has not fetched
    page = sso_page()
    sign_in(page, sso, "alice")
    page.locator("#session-person").filter(has_text="admin").wait_for()

    # An API token works as before on the same server, for scripts.
    created = subprocess.run(
        [sys.executable, "-m", "backfiller", "token", "create", "--name", "script",
         "--role", "viewer", "--database", sso.database_url, "--json"],
        cwd=REPO, capture_output=True, text=True, check=True,
    )  # fmt: skip
    token = json.loads(created.stdout)["token"]
    answer = httpx.post(
        f"{sso.url}/graphql/v1",
        json={"query": "{ me { name role } }"},
        headers={"Authorization": f"Bearer {token}"},
    )
    assert answer.json()["data"]["me"] == {"name": "script", "role": "VIEWER"}
