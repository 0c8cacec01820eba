"""`backfiller dev`, the quick start: API and daemon in one process, with the example jobs."""

from __future__ import annotations

import pytest

from tests.acceptance.daemon_support import gql, runs_of, wait_status
from tests.support import LiveServer

pytestmark = pytest.mark.acceptance


def test_dev_serves_the_api_and_runs_backfills_of_the_examples(database_url: str) -> None:
    server = LiveServer(database_url, command="dev", extra=["--workers", "1"])
    try:
        banner = "Backfiller is running: open http://127.0.0.1:"
        assert banner in server.output_once_it_says(banner)
        data = gql(
            server,
            """mutation { launchBackfill(input: {
                 target: {job: "region_report"}, partitions: {all: true},
                 runConfig: {currency: "EUR"}}) { backfill { id } userErrors { message } } }""",
        )
        backfill_id = data["launchBackfill"]["backfill"]["id"]
        backfill = wait_status(server, backfill_id, {"COMPLETED_SUCCESS"}, timeout=60)
        assert backfill["counts"]["succeeded"] == 3
        run = runs_of(server, backfill_id)[0]
        logs = gql(
            server,
            "query($id: ID!) { run(id: $id) { partitionKey logs { nodes { message } } } }",
            {"id": run["id"]},
        )["run"]
        assert logs["logs"]["nodes"] == [{"message": f"report for {logs['partitionKey']} in EUR"}]
    finally:
        server.stop()
    assert "Traceback" not in server.output() if server.log_path.exists() else True
