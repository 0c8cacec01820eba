"""/metrics of a real server, daemon and its workers during a real backfill, checked against
the backfill's runs; and /healthz, /readyz of both."""

from __future__ import annotations

import re

import httpx
import pytest

from tests.acceptance.daemon_support import Daemon, launch, runs_of, wait_for, wait_status
from tests.operations.support import check_with_promtool, scrape, value
from tests.support import REPO, LiveServer, answers, free_port, live_server

pytestmark = pytest.mark.acceptance

DEFS = "tests.defs.jobs_daemon:definitions"


server = live_server(DEFS)


def test_counters_of_server_daemon_and_workers_match_the_runs(
    server: LiveServer, database_url: str
) -> None:
    port = free_port()
    daemon = Daemon(database_url, workers=2, extra=["--metrics-port", str(port)])
    metrics = f"http://127.0.0.1:{port}"
    try:
        wait_for("the daemon's endpoint", lambda: answers(f"{metrics}/healthz"), timeout=30)
        # flaky: even days fail their first attempt and succeed on the retry.
        backfill = launch(server, "flaky", "2001-01-01", "2001-01-10")
        wait_status(server, backfill, {"COMPLETED_SUCCESS"})
        runs = runs_of(server, backfill)
        succeeded = sum(r["status"] == "SUCCESS" for r in runs)
        failed = sum(r["status"] == "FAILED" for r in runs)
        assert (succeeded, failed, len(runs)) == (10, 5, 15)

        def daemon_done() -> str | None:
            text = scrape(f"{metrics}/metrics")
            done = value(text, "backfiller_backfills", status="completed_success") == 1
            return (
                text
                if done and value(text, "backfiller_daemon_runs_total", event="succeeded") == 10
                else None
            )

        text = wait_for("the daemon's gauges", daemon_done, timeout=30, every=0.5)
        check_with_promtool(text)
        assert value(text, "backfiller_daemon_runs_total", event="claimed") == len(runs)
        assert value(text, "backfiller_daemon_runs_total", event="started") == len(runs)
        assert value(text, "backfiller_daemon_runs_total", event="failed") == failed
        assert value(text, "backfiller_daemon_runs_total", event="retried") == failed
        assert value(text, "backfiller_daemon_run_failures_total", reason="error") == failed
        assert value(text, "backfiller_daemon_dispatch_latency_seconds_count") == len(runs)
        assert value(text, "backfiller_daemon_backfills_finished_total", status="completed") == 1
        assert value(text, "backfiller_daemon_task_duration_seconds_count", task="launch") > 0
        assert value(text, "backfiller_active_partitions", state="running") == 0
        # The worker processes' own counters, added up by the daemon.
        assert value(text, "backfiller_worker_runs_total", job="flaky", outcome="success") == 10
        assert value(text, "backfiller_worker_runs_total", job="flaky", outcome="error") == 5
        assert value(text, "backfiller_worker_run_duration_seconds_count", job="flaky") == 15
        beating = {
            int(pid)
            for pid in _label_values(text, "backfiller_worker_heartbeat_timestamp_seconds", "pid")
        }
        assert beating == set(daemon.workers())

        api = scrape(f"{server.url}/metrics")  # --auth none: loopback, open
        check_with_promtool(api)
        assert value(api, "backfiller_api_operations_total", operation="launchBackfill") == 1
        assert (
            value(
                api, "backfiller_api_operation_duration_seconds_count", operation="launchBackfill"
            )
            == 1
        )
        assert value(api, "backfiller_http_requests_total", route="graphql", status="200") >= 2
        assert value(api, "backfiller_db_pool_checkouts_total") > 0

        # Every metric the Grafana dashboard charts is exported by one of them.
        dashboard = (REPO / "docs" / "grafana-dashboard.json").read_text()
        for name in set(re.findall(r"backfiller_[a-z_]+", dashboard)):
            name = name.removesuffix("_bucket")
            assert name in text or name in api, name

        ready = httpx.get(f"{metrics}/readyz", timeout=5)
        assert ready.status_code == 200, ready.text
        assert set(ready.json()["checks"]) == {
            "database",
            "migrations",
            "definitions",
            "loop",
            "lease",
        }
        server_ready = httpx.get(f"{server.url}/readyz", timeout=5)
        assert server_ready.status_code == 200, server_ready.text
        assert server_ready.json()["checks"]["migrations"]["ok"] is True
    finally:
        daemon.stop()


def _label_values(text: str, name: str, label: str) -> list[str]:
    from tests.operations.support import samples

    return [dict(labels)[label] for (n, labels), _ in samples(text).items() if n == name]
