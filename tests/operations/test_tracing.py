"""OpenTelemetry: a launch's spans (HTTP -> resolver -> insert) in an in-memory exporter; a
run's span linked to its launch; the worker's and the user's spans under it, received by a
local OTLP/HTTP collector from the real worker processes."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import httpx
import pytest
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from backfiller.config import AuthMode, Settings
from backfiller.daemon import Daemon, DaemonSettings
from backfiller.definitions.loading import load_definitions
from backfiller.domain import BackfillState
from backfiller.launchers import LocalLauncher
from backfiller.observability import tracing
from backfiller.resolvers.context import Services
from backfiller.storage import Database
from backfiller.storage.repositories import BackfillRepository
from backfiller.web.app import create_app
from tests.operations.collector import Collector
from tests.support import LAUNCH

DEFS = "tests.operations.traced_defs:definitions"
CLIENT_TRACE = "0af7651916cd43dd8448eb211c80319c"
CLIENT_SPAN = "b7ad6b7169203331"


@pytest.fixture
def exporter(monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[InMemorySpanExporter, Collector]]:
    collector = Collector()
    # The workers export to the collector (they inherit the variable); this process, in memory.
    monkeypatch.setenv(tracing.ENDPOINT_VARIABLE, collector.url)
    memory = InMemorySpanExporter()
    tracing.configure(exporter=memory)
    yield memory, collector
    tracing.disable()
    collector.server.shutdown()
    collector.server.server_close()


@pytest.mark.acceptance
async def test_launch_and_run_spans_nest_and_link(
    database_url: str, exporter: tuple[InMemorySpanExporter, Collector]
) -> None:
    memory, collector = exporter
    definitions = load_definitions(DEFS)
    database = Database(database_url)
    services = Services(
        database=database, definitions=definitions, settings=Settings(auth_mode=AuthMode.NONE)
    )
    transport = httpx.ASGITransport(app=create_app(services))
    async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1") as client:
        response = await client.post(
            "/graphql/v1",
            json={
                "query": LAUNCH,
                "variables": {
                    "input": {
                        "target": {"job": "traced"},
                        "partitions": {"range": {"start": "2001-01-01", "end": "2001-01-02"}},
                    }
                },
            },
            headers={"traceparent": f"00-{CLIENT_TRACE}-{CLIENT_SPAN}-01"},
        )
    assert response.json()["data"]["launchBackfill"]["userErrors"] == []
    backfill_pk = int(
        response.json()["data"]["launchBackfill"]["backfill"]["id"].removeprefix("bf_")
    )
    launcher = LocalLauncher(DEFS, 1).start()
    daemon = Daemon(Database(database_url), definitions, launcher, DaemonSettings())
    stop = asyncio.Event()
    running = asyncio.create_task(daemon.run(stop))
    try:
        for _ in range(600):
            async with database.read() as session:
                record = await BackfillRepository(session).get(backfill_pk)
            if (
                record is not None
                and record.status is BackfillState.COMPLETED_SUCCESS
                and len(collector.spans) >= 4
            ):
                break
            await asyncio.sleep(0.1)
    finally:
        stop.set()
        await running
        await daemon.database.dispose()
        await database.dispose()
    spans = {s.name: s for s in memory.get_finished_spans() if not s.name.startswith("db ")}
    http = spans["HTTP POST graphql"]
    resolver = spans["graphql launchBackfill"]
    # The request continues the client's trace; the resolver is under it; the insert under that.
    assert format(http.context.trace_id, "032x") == CLIENT_TRACE
    assert http.parent is not None and format(http.parent.span_id, "016x") == CLIENT_SPAN
    assert resolver.parent is not None and resolver.parent.span_id == http.context.span_id
    inserts = [
        s
        for s in memory.get_finished_spans()
        if s.name == "db INSERT"
        and s.parent is not None
        and s.parent.span_id == resolver.context.span_id
    ]
    assert inserts  # the backfill's row, its event, ...
    # Every statement is under a request, a tick or a job: none is a trace of its own; a
    # daemon task's pass is one span, its statements under it.
    finished = memory.get_finished_spans()
    assert [s.name for s in finished if s.name.startswith("db ") and s.parent is None] == []
    ticks = {s.context.span_id: s for s in finished if s.name.startswith("tick ")}
    assert {"tick launch", "tick results"} <= {s.name for s in ticks.values()}
    assert any(s.parent is not None and s.parent.span_id in ticks for s in finished)
    runs = [s for s in memory.get_finished_spans() if s.name == "run traced"]
    assert len(runs) == 2
    for run in runs:
        # A run is its own trace, linked to the launch of its backfill.
        assert run.parent is None
        assert [link.context.span_id for link in run.links] == [resolver.context.span_id]
        run_span = format(run.context.span_id, "016x")
        job = next(
            s for s in collector.spans if s["name"] == "execute traced" and s["parent"] == run_span
        )
        user = [
            s for s in collector.spans if s["name"] == "user work" and s["parent"] == job["span"]
        ]
        assert len(user) == 1
