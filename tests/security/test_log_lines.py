"""Log lines: nothing a request sends can forge one, and no secret reaches any line of any
process of a full stack (a server and a daemon with webhooks, in both formats), third-party
loggers' lines included."""

from __future__ import annotations

import asyncio
import io
import json
import logging
from collections.abc import Iterator
from datetime import UTC, datetime

import httpx
import pytest

from backfiller.ids import parse_backfill_id, parse_run_id
from backfiller.observability import logs, redaction
from backfiller.storage import Database
from backfiller.storage.migrations import upgrade_database
from backfiller.storage.run_credentials import forget_signing_keys, mint_run_credentials
from tests.acceptance.daemon_support import Daemon, wait_for
from tests.operations.receiver import Receiver
from tests.security.conftest import _make_tokens
from tests.support import LiveServer

DEFS = "tests.defs.jobs_daemon:definitions"
FORGED = "2026-12-03 00:00:00,000 ERROR backfiller.auth: FORGED-LINE"


@pytest.mark.acceptance
@pytest.mark.parametrize("fmt", ["text", "json"])
def test_a_request_cannot_forge_a_log_line(database_url: str, fmt: str) -> None:
    server = LiveServer(database_url, DEFS, auth="token", env={"BACKFILLER_LOG_FORMAT": fmt})
    answers: list[tuple[str, int, str]] = []  # said when the line is missing (seen once on CI)
    try:
        forged = FORGED.replace(" ", "%20")
        for path in (
            f"/graphql/v1%0a{forged}",
            f"/api/v1/backfills/x%0d%0a{forged}",
            f"/nowhere%0a{forged}%1b[2K%e2%80%a8",
        ):
            # A token that is no token: the gate logs its refusal, with the path.
            headers = {"Authorization": "Bearer not-a-token"}
            answer = httpx.get(httpx.URL(f"{server.url}{path}"), headers=headers, timeout=10)
            answers.append((path[:24], answer.status_code, answer.text[:200]))
            assert answer.status_code in (401, 404)
        output = server.output_once_it_says("FORGED-LINE")
    finally:
        server.stop()
    lines = output.splitlines()
    assert any("FORGED-LINE" in line for line in lines), (answers, output[-3000:])  # escaped
    for line in lines:
        assert not line.startswith(FORGED[:19]), line
        assert "\x1b" not in line and "\u2028" not in line
        if fmt == "json" and line.startswith("{"):
            json.loads(line)
        elif fmt == "text":
            # A record's first line starts with its time; a further one is indented.
            assert line[:4].isdigit() or line.startswith((" ", "Backfiller API")), line


SLACK_SECRET = "B0SECRETPATHxyz"
QUERY_SECRET = "querysecret123"
URL_PASSWORD = "hookpassw0rd"
REDIS_PASSWORD = "redispassw0rd"
WEBHOOK_SECRET = "webhook-signing-secret-9"


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    found = Receiver()
    found.script = lambda n: (500, 0.0) if n == 1 else (200, 0.0)
    yield found
    found.close()


async def _credential(url: str, backfill: str, run: str) -> str:
    forget_signing_keys()
    database = Database(url)
    try:
        backfill_pk, run_pk = parse_backfill_id(backfill), parse_run_id(run)
        assert backfill_pk is not None and run_pk is not None
        minted = await mint_run_credentials(
            database, backfill_pk, "admin", [run_pk], datetime.now(UTC)
        )
    finally:
        await database.dispose()
    return minted[run_pk]


@pytest.mark.acceptance
@pytest.mark.parametrize("fmt", ["text", "json"])
def test_no_secret_reaches_any_line_of_a_full_stack(
    database_url: str, receiver: Receiver, fmt: str
) -> None:
    upgrade_database(database_url)
    tokens = asyncio.run(_make_tokens(database_url))
    env = {
        "BACKFILLER_LOG_FORMAT": fmt,
        "BACKFILLER_WEBHOOK_SECRET": WEBHOOK_SECRET,
        "BACKFILLER_WEBHOOK_ALLOW": "127.0.0.1",
        "BACKFILLER_RATE_LIMIT_URL": f"redis://:{REDIS_PASSWORD}@127.0.0.1:1/0",
    }
    port = receiver.server.server_address[1]
    hook = (
        f"http://hook:{URL_PASSWORD}@127.0.0.1:{port}/services/T0/{SLACK_SECRET}?t={QUERY_SECRET}"
    )
    server = LiveServer(database_url, DEFS, auth="token", env=env)
    daemon = Daemon(
        database_url,
        workers=1,
        extra=["--notify-url", hook, "--notify-format", "slack", "--notify-timeout", "2"],
        env=env,
    )
    try:
        admin = {"Authorization": f"Bearer {tokens.admin}"}
        own: list[dict[str, object]] = [
            {"url": f"{receiver.url}/own/{SLACK_SECRET}-own", "events": ["COMPLETED_SUCCESS"]}
        ]
        backfill = launch_as(server, admin, own)
        wait_for(
            "the backfill's end", lambda: status_as(server, backfill, admin) == "COMPLETED_SUCCESS"
        )
        run = runs_of_as(server, backfill, admin)
        credential = asyncio.run(_credential(database_url, backfill, run))
        # Secrets sent where they do not belong, and so into lines the server writes.
        for secret in (tokens.admin, credential):
            httpx.get(f"{server.url}/api/v1/backfills/{secret}", headers=admin, timeout=10)
            httpx.get(f"{server.url}/graphql/v1", headers={"Authorization": f"Bearer {secret}x"})
        wait_for("every delivery", lambda: len(receiver.snapshot()) >= 4, timeout=60)
        wait_for("httpx's lines in the daemon's log", lambda: "HTTP Request" in daemon.output(), 30)
        server_output, daemon_output = server.output(), daemon.output()
    finally:
        daemon.stop()
        server.stop()
    secrets = (
        tokens.admin,
        credential,
        credential[4:40],
        SLACK_SECRET,
        QUERY_SECRET,
        URL_PASSWORD,
        REDIS_PASSWORD,
        WEBHOOK_SECRET,
    )
    for output in (server_output, daemon_output):
        for line in output.splitlines():
            for secret in secrets:
                assert secret not in line, (secret[:8], line)
    # The third-party logger wrote its lines, scrubbed: not a scan of an empty log.
    httpx_lines = [line for line in daemon_output.splitlines() if "HTTP Request" in line]
    assert httpx_lines and all(redaction.REDACTED in line for line in httpx_lines)


def launch_as(server: LiveServer, headers: dict[str, str], notify: list[dict[str, object]]) -> str:
    mutation = """mutation($i: LaunchBackfillInput!) { launchBackfill(input: $i) {
      backfill { id } userErrors { code } } }"""
    given = {
        "target": {"job": "steady"},
        "partitions": {"range": {"start": "2001-01-01", "end": "2001-01-02"}},
        "notify": notify,
    }
    answer = server.graphql(mutation, {"i": given}, headers=headers).json()
    assert answer["data"]["launchBackfill"]["userErrors"] == [], answer
    found: str = answer["data"]["launchBackfill"]["backfill"]["id"]
    return found


def status_as(server: LiveServer, backfill: str, headers: dict[str, str]) -> str:
    query = "query($id: ID!) { backfill(id: $id) { status } }"
    found: str = server.graphql(query, {"id": backfill}, headers=headers).json()["data"][
        "backfill"
    ]["status"]
    return found


def runs_of_as(server: LiveServer, backfill: str, headers: dict[str, str]) -> str:
    query = "query($id: ID!) { backfill(id: $id) { runs(first: 1) { nodes { id } } } }"
    answer = server.graphql(query, {"id": backfill}, headers=headers).json()
    found: str = answer["data"]["backfill"]["runs"]["nodes"][0]["id"]
    return found


def test_records_of_any_logger_are_scrubbed_for_any_handler() -> None:
    """Celery and kombu write through handlers of their own: once the shared setup installed
    the redaction, the records they make are already clean, whichever handler writes them."""
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)  # as a library installs its own
    library = logging.getLogger("kombu.connection.test")
    library.addHandler(handler)
    library.propagate = False
    redaction.install()
    try:
        library.warning(
            "Cannot connect to %s: %s",
            "amqp://guest:brokerpass@127.0.0.1:5672//",
            "token bfr_eyJyIjoxfQ.c2lnbmF0dXJlc2lnbmF0dXJl and Bearer bft_abcdefghijklmnop",
        )
        try:
            raise ValueError("https://hooks.slack.com/services/T0/B0/xoxsecret failed")
        except ValueError:
            library.exception("delivery")
    finally:
        redaction.uninstall()
        library.removeHandler(handler)
    text = stream.getvalue()
    for secret in ("brokerpass", "eyJyIjoxfQ", "abcdefghijklmnop", "xoxsecret"):
        assert secret not in text
    assert "amqp://guest:[REDACTED]@127.0.0.1:5672/[REDACTED]" in text
    assert logs.escape_controls("a\nb") == "a\\nb"
