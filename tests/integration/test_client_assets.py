"""The Python client's asset reads and asset backfills, and its tolerance of enum values it
does not know, against a real ``backfiller dev`` process (API, daemon and worker)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from backfiller_client import (
    AssetSelection,
    AsyncClient,
    BackfillerUserError,
    BackfillRequest,
    BackfillStatus,
    Client,
    PartitionKeys,
    PartitionRange,
    PartitionStatus,
    RunStatus,
    TriggerOutcome,
)
from tests.support import LiveServer

MARCH = PartitionRange("2024-03-01", "2024-03-02")


DEFS = "tests.defs.client:definitions"


@pytest.fixture(scope="module")
def server(module_database_url: str) -> Iterator[str]:
    """``backfiller dev``: the API, the daemon and one worker in one process, for the module."""
    live = LiveServer(module_database_url, DEFS, command="dev", extra=["--workers", "1"])
    try:
        yield live.url
    finally:
        live.stop()


@pytest.fixture
def client(server: str) -> Iterator[Client]:
    with Client(server) as c:
        yield c


def test_the_asset_graph_reads_typed(client: Client) -> None:
    assets = {a.name: a for a in client.assets()}
    assert list(assets)[:2] == ["raw_events", "daily_visits"]  # dependency order
    visits = assets["daily_visits"]
    assert (visits.upstream, visits.downstream, visits.level) == (
        ("raw_events",),
        ("monthly_report",),
        1,
    )
    assert visits.partitions is not None and visits.partitions.cadence == "daily"
    assert assets["visits_summary"].partitions is None
    assert client.asset("monthly_report") == assets["monthly_report"]
    assert client.asset("no_such_asset") is None
    with pytest.raises(BackfillerUserError) as refused:
        list(client.asset_partitions("no_such_asset"))
    assert refused.value.codes == ("ASSET_NOT_FOUND",)
    with pytest.raises(ValueError, match="page_size"):
        client.asset_partitions("raw_events", page_size=1001)


def test_an_asset_backfill_previews_launches_and_reads_per_asset(client: Client) -> None:
    request = BackfillRequest(
        assets=AssetSelection(["daily_visits"], downstream=True),
        partitions=MARCH,
        reprocess="ALL",
    )
    preview = client.preview_backfill(request)
    assert preview.assets is not None
    assert [(a.name, a.level, a.total) for a in preview.assets] == [
        ("daily_visits", 0, 2),
        ("monthly_report", 1, 1),
        ("visits_summary", 2, 1),
    ]
    launched = client.launch_backfill(request)
    assert launched.job is None
    assert launched.assets == AssetSelection(["daily_visits"], downstream=True)
    assert launched.covered_assets == ("daily_visits", "monthly_report", "visits_summary")
    final = client.wait(launched.id, poll_interval=0.2, timeout=60)
    assert final.status is BackfillStatus.COMPLETED_SUCCESS
    per_asset = client.backfill_assets(launched.id)
    assert [(a.name, a.counts.succeeded) for a in per_asset] == [
        ("daily_visits", 2),
        ("monthly_report", 1),
        ("visits_summary", 1),
    ]
    assert per_asset[0].partition_status_ranges[0].status is PartitionStatus.SUCCEEDED
    runs = list(client.runs(launched.id))
    assert {r.asset for r in runs} == {"daily_visits", "monthly_report", "visits_summary"}
    assert all(r.worker is not None and r.worker.host and r.worker.pid for r in runs)
    statuses = list(client.asset_partitions("daily_visits", page_size=1))
    assert [(p.key, p.status) for p in statuses] == [
        ("2024-03-01", RunStatus.SUCCESS),
        ("2024-03-02", RunStatus.SUCCESS),
    ]
    job_backfill = client.launch_backfill(
        BackfillRequest(job="daily_sales", partitions=PartitionKeys(["2024-03-01"]))
    )
    assert (job_backfill.assets, job_backfill.covered_assets) == (None, ())
    assert client.backfill_assets(job_backfill.id) == []
    client.cancel(job_backfill.id)


async def test_the_async_client_reads_assets_too(server: str) -> None:
    async with AsyncClient(server) as client:
        names = [a.name for a in await client.assets()]
        assert names[0] == "raw_events"
        found = await client.asset("daily_visits")
        assert found is not None and found.upstream == ("raw_events",)
        with pytest.raises(BackfillerUserError, match="no asset named"):
            _ = [p async for p in client.asset_partitions("no_such_asset")]


# -- enum values this client does not know ---------------------------------------------------


class ReplacingTransport(httpx.BaseTransport):
    """Forwards to the real server, and answers its response with every ``key: value``
    replaced by ``key: "SOMETHING_NEW"``: what a later server adding an enum value sends."""

    def __init__(self, key: str, value: str) -> None:
        self.inner = httpx.HTTPTransport()
        self.key, self.value = key, value
        self.replaced = 0

    def replace(self, found: Any) -> Any:
        if isinstance(found, dict):
            return {
                k: "SOMETHING_NEW"
                if k == self.key and v == self.value and self.count()
                else self.replace(v)
                for k, v in found.items()
            }
        if isinstance(found, list):
            return [self.replace(v) for v in found]
        return found

    def count(self) -> bool:
        self.replaced += 1
        return True

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        response = self.inner.handle_request(request)
        body = self.replace(json.loads(response.read()))
        return httpx.Response(response.status_code, json=body)

    def close(self) -> None:
        self.inner.close()


def read_through(server: str, key: str, value: str) -> tuple[Client, ReplacingTransport]:
    transport = ReplacingTransport(key, value)
    return Client(server, transport=transport), transport


def test_enum_values_added_later_read_as_unknown(client: Client, server: str) -> None:
    finished = client.launch_backfill(
        BackfillRequest(
            assets=AssetSelection(["raw_events"]), partitions=PartitionKeys(["2024-04-02"])
        )
    )
    client.wait(finished.id, poll_interval=0.2, timeout=60)

    future, transport = read_through(server, "status", "SUCCEEDED")
    with future:
        backfill = future.get_backfill(finished.id)
        ranges = future.partition_status_ranges(finished.id)
    assert backfill is not None and backfill.status is BackfillStatus.COMPLETED_SUCCESS
    assert [r.status for r in ranges] == [PartitionStatus.UNKNOWN]
    assert transport.replaced == 1

    future, transport = read_through(server, "status", "COMPLETED_SUCCESS")
    with future:
        backfill = future.get_backfill(finished.id)
    assert backfill is not None and backfill.status is BackfillStatus.UNKNOWN
    assert not backfill.is_finished

    future, transport = read_through(server, "status", "SUCCESS")
    with future:
        runs = list(future.runs(finished.id))
        latest = list(future.asset_partitions("raw_events"))
    assert [r.status for r in runs] == [RunStatus.UNKNOWN]
    assert RunStatus.UNKNOWN in {p.status for p in latest}

    future, transport = read_through(server, "outcome", "SKIPPED")
    with future:
        evaluation = future.evaluate_trigger("quiet")
    assert evaluation.outcome is TriggerOutcome.UNKNOWN and transport.replaced == 1


def test_unknown_is_never_sent(client: Client) -> None:
    for statuses in (["DONE"], [BackfillStatus.UNKNOWN]):
        with pytest.raises(ValueError, match="is not a BackfillStatus"):
            next(client.list_backfills(statuses=statuses))
    with pytest.raises(ValueError, match="is not a RunStatus"):
        next(client.runs("bf_1", statuses=["UNKNOWN"]))
