"""Who may read the API's /metrics, and the sum over several server processes."""

from __future__ import annotations

import asyncio

import httpx

from backfiller.storage.migrations import upgrade_database
from tests.operations.support import check_with_promtool, scrape, value
from tests.security.conftest import _make_tokens
from tests.support import LiveServer, free_port

DEFS = "tests.defs.jobs_daemon:definitions"


def test_metrics_need_an_admin_token_or_the_loopback_metrics_port(database_url: str) -> None:
    upgrade_database(database_url)
    tokens = asyncio.run(_make_tokens(database_url))
    port = free_port()
    server = LiveServer(database_url, DEFS, auth="token", extra=["--metrics-port", str(port)])
    try:
        url = f"{server.url}/metrics"
        assert httpx.get(url).status_code == 401
        for who in ("viewer", "operator"):
            refused = httpx.get(url, headers={"Authorization": f"Bearer {tokens.of(who)}"})
            assert refused.status_code == 403
        assert (
            httpx.get(url, headers={"Authorization": f"Bearer {tokens.revoked}"}).status_code == 401
        )
        text = scrape(url, tokens.admin)
        check_with_promtool(text)
        # The metrics port answers without a token, on loopback only.
        open_text = scrape(f"http://127.0.0.1:{port}/metrics")
        assert "backfiller_http_requests_total" in open_text
        assert httpx.get(f"{server.url}/readyz").status_code == 200  # no token needed
    finally:
        server.stop()


def test_several_server_processes_add_up_on_any_of_them(database_url: str) -> None:
    server = LiveServer(database_url, DEFS, extra=["--workers", "2"])
    try:
        for _ in range(6):
            # A fresh connection each time: the kernel spreads them over the processes.
            with httpx.Client() as client:
                assert (
                    client.post(
                        f"{server.url}/graphql/v1", json={"query": "{ apiVersion }"}
                    ).status_code
                    == 200
                )
        for _ in range(3):
            text = scrape(f"{server.url}/metrics")
            assert value(text, "backfiller_api_operations_total", operation="apiVersion") == 6
        check_with_promtool(text)
    finally:
        server.stop()
