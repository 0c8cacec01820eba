"""The quick start's trigger: launch the missing days of daily_sales once the upstream lands."""

from __future__ import annotations

import os
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from backfiller.domain import RunState
from backfiller.examples.quickstart import DEFAULT_LANDING_DIR, LANDING_DIR_ENV
from backfiller.storage import Database
from backfiller.storage.records import BackfillRecord, PartitionStateRecord
from tests.support import GraphQLRunner, count_rows

EVALUATE = """
mutation($dryRun: Boolean!) {
  evaluateTrigger(input: { name: "missing_sales_days", dryRun: $dryRun }) {
    evaluation {
      outcome skipReason errorMessage
      backfills { id title counts { total } }
      requests { partitionSelection { keys } preview { total runs } }
    }
    userErrors { code }
  }
}
"""


async def press(gql: GraphQLRunner, dry_run: bool = False) -> dict[str, Any]:
    data = await gql(EVALUATE, {"dryRun": dry_run})
    evaluation: dict[str, Any] = data["evaluateTrigger"]["evaluation"]
    return evaluation


async def test_it_skips_until_the_upstream_lands_then_launches_only_missing_days(
    gql: GraphQLRunner, database: Database, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Unset, the landing folder is .backfiller/landing under the working directory.
    monkeypatch.delenv(LANDING_DIR_ENV, raising=False)
    monkeypatch.chdir(tmp_path)
    assert (await press(gql))["skipReason"] == (
        f"the upstream export has not landed yet (no {DEFAULT_LANDING_DIR / '_SUCCESS'})"
    )
    monkeypatch.setenv(LANDING_DIR_ENV, str(tmp_path))
    waiting = await press(gql)
    assert waiting["outcome"] == "SKIPPED"
    assert waiting["skipReason"].startswith("the upstream export has not landed yet")

    at = datetime(2026, 1, 1, tzinfo=UTC)
    async with database.write() as session:
        for key in ("2024-01-01", "2024-01-02"):
            session.add(
                PartitionStateRecord(
                    job_name="daily_sales",
                    partition_key=key,
                    status=RunState.SUCCESS,
                    updated_at=at,
                )
            )
    (tmp_path / "_SUCCESS").touch()
    dry = await press(gql, dry_run=True)
    [request] = dry["requests"]
    keys = request["partitionSelection"]["keys"]
    assert keys[0] == "2024-01-03" and keys[-1] == "2026-06-14"
    assert request["preview"] == {"total": len(keys), "runs": len(keys)}
    assert await count_rows(database, BackfillRecord) == 0

    launched = await press(gql)
    assert launched["outcome"] == "LAUNCHED"
    [backfill] = launched["backfills"]
    assert backfill["title"] == f"Missing sales days ({len(keys)})"
    assert backfill["counts"]["total"] == len(keys)
    # The cursor remembers the export it handled: pressing again launches nothing.
    again = await press(gql)
    assert again["skipReason"] == "this export was already handled"
    # A new export (a newer marker) is handled again, once.
    stamp = (tmp_path / "_SUCCESS").stat().st_mtime + 60
    os.utime(tmp_path / "_SUCCESS", (stamp, stamp))
    assert (await press(gql))["outcome"] == "LAUNCHED"
    assert await count_rows(database, BackfillRecord) == 2
