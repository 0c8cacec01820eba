"""Schemathesis against the REST endpoint's own OpenAPI document, on a live server with
``--auth token``: no 5xx, every status, header, content type and body as documented, bad
input refused with a 4xx. The example count is bounded and the seed fixed, so a run is
repeatable (``BACKFILLER_FUZZ_SEED`` / ``BACKFILLER_FUZZ_EXAMPLES`` explore further)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

from tests.acceptance.client_support import DEFS, create_token
from tests.support import LiveServer, live_server

EXCLUDED_CHECKS = (
    # A well-formed launch may still be refused as data (unknown job, bad key): 422 is right.
    "positive_data_acceptance",
    # Auth is optional in the document (servers may run with --auth none).
    "ignored_auth",
)


secured = live_server(DEFS, auth="token")


def test_the_rest_endpoint_matches_its_openapi_document(
    secured: LiveServer, database_url: str, tmp_path: Path
) -> None:
    token = create_token(database_url, "admin", name="schemathesis")
    st = Path(sys.executable).parent / "st"  # schemathesis, installed beside this Python
    assert st.exists(), f"schemathesis is not installed beside {sys.executable}"
    done = subprocess.run(
        [
            str(st),
            "run",
            f"{secured.url}/api/v1/openapi.json",
            "--url",
            secured.url,
            "--header",
            f"Authorization: Bearer {token}",
            "--checks",
            "all",
            "--exclude-checks",
            ",".join(EXCLUDED_CHECKS),
            "--max-examples",
            os.environ.get("BACKFILLER_FUZZ_EXAMPLES", "25"),
            "--seed",
            os.environ.get("BACKFILLER_FUZZ_SEED", "20261130"),
            "--generation-database",
            "none",
            "--workers",
            "1",
            "--no-color",
        ],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=420,
    )
    report = done.stdout + done.stderr
    assert done.returncode == 0, report
    assert "Failures:" not in report, report
    # Every operation was exercised (11 since `update` joined `launch` ... `retry`).
    counted = re.search(r"Operations:\s+(\d+) selected / (\d+) total", report)
    assert counted is not None, report
    assert counted[1] == counted[2] and int(counted[2]) >= 11, report
