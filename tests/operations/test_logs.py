"""Structured logs: JSON lines with the request's id and actor, and no secret, ever."""

from __future__ import annotations

import asyncio
import json
import logging
from typing import Any

import httpx
import pytest

from backfiller.observability import logs
from backfiller.storage.migrations import upgrade_database
from tests.acceptance.daemon_support import Daemon, wait_for
from tests.security.conftest import _make_tokens
from tests.support import LAUNCH, LiveServer

DEFS = "tests.defs.jobs_daemon:definitions"
WEBHOOK_SECRET = "hush-webhook-key-123"
RUN_TOKEN = "bft_runtokensecretvalue0123456789"
URL_PASSWORD = "pa55word-in-url"


def json_lines(output: str) -> list[dict[str, Any]]:
    """The log lines (banners printed by the commands themselves are not log lines)."""
    return [json.loads(line) for line in output.splitlines() if line.startswith("{")]


@pytest.mark.acceptance
def test_json_lines_carry_request_id_and_actor_and_never_a_secret(database_url: str) -> None:
    upgrade_database(database_url)
    tokens = asyncio.run(_make_tokens(database_url))
    env = {
        "BACKFILLER_LOG_FORMAT": "json",
        "BACKFILLER_WEBHOOK_SECRET": WEBHOOK_SECRET,
        "BACKFILLER_TOKEN": RUN_TOKEN,
    }
    server = LiveServer(database_url, DEFS, auth="token", env=env)
    # A webhook that refuses connections, with credentials in its URL: its failures are logged.
    hook = f"http://user:{URL_PASSWORD}@127.0.0.1:9/hook"
    daemon = Daemon(
        database_url,
        extra=["--notify-url", hook, "--notify-timeout", "1", "--webhook-allow", "127.0.0.1"],
        env=env,
    )
    try:
        bearer = {"Authorization": f"Bearer {tokens.admin}"}
        body = {
            "query": LAUNCH,
            "variables": {
                "input": {
                    "target": {"job": "steady"},
                    "partitions": {"range": {"start": "2001-01-01", "end": "2001-01-03"}},
                }
            },
        }
        launched = httpx.post(f"{server.url}/graphql/v1", json=body, headers=bearer, timeout=30)
        assert launched.json()["data"]["launchBackfill"]["userErrors"] == []
        request_id = launched.headers["x-request-id"]
        forged = {"Authorization": "Bearer bft_notarealtokenbutlookslikeone000"}
        assert httpx.post(f"{server.url}/graphql/v1", json=body, headers=forged).status_code == 401
        wait_for(
            "a failed delivery in the daemon's log",
            lambda: "notification" in daemon.output() and "failed" in daemon.output(),
            timeout=60,
        )
        server_output, daemon_output = server.output(), daemon.output()
    finally:
        daemon.stop()
        server.stop()
    for output in (server_output, daemon_output):
        for secret in (tokens.admin, WEBHOOK_SECRET, RUN_TOKEN, URL_PASSWORD, "notarealtoken"):
            assert secret not in output
    lines = json_lines(server_output)
    access = [line for line in lines if line["logger"] == "backfiller.access"]
    launch_line = next(line for line in access if line.get("request_id") == request_id)
    assert launch_line["actor"] == "admin"
    assert launch_line["message"].startswith("POST /graphql/v1 200")
    assert {"time", "level", "logger", "message"} <= set(launch_line)
    failures = [line for line in json_lines(daemon_output) if line["logger"] == "backfiller.notify"]
    assert failures and all(line["backfill_id"].startswith("bf_") for line in failures)


def test_redaction_covers_arguments_and_tracebacks(caplog: pytest.LogCaptureFixture) -> None:
    record = logging.LogRecord(
        "t",
        logging.ERROR,
        __file__,
        1,
        "auth %s url %s",
        ("Bearer abc.def", "postgresql://u:pw1@h/db"),
        None,
    )
    try:
        raise ValueError("token bft_0123456789abcdef leaked")
    except ValueError:
        import sys

        record.exc_info = sys.exc_info()
    logs.ContextAndRedaction().filter(record)
    text = logs.JsonFormatter().format(record)
    assert "abc.def" not in text and "pw1" not in text and "0123456789abcdef" not in text
    assert (
        json.loads(text)["message"] == "auth Bearer [REDACTED] url postgresql://u:[REDACTED]@h/db"
    )
