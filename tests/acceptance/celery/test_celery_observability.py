"""What an operator sees of a Celery deployment: every metric the Grafana dashboard charts,
from the API, the daemon and the workers' own ``/metrics``; and a run's trace, from the daemon's
run span to the worker's ``execute`` span, with no database statement as a trace of its own.

Real processes (API, a daemon ``--launcher celery``, two ``backfiller worker``), PostgreSQL,
RabbitMQ and Redis; every process exports its spans to one OTLP/HTTP collector on loopback.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.acceptance.celery.support import Cluster, broker_url, cluster
from tests.acceptance.daemon_support import launch, wait_for, wait_status
from tests.operations.collector import Collector
from tests.operations.support import check_with_promtool, samples, scrape, value
from tests.support import REPO, answers, free_port

pytestmark = [pytest.mark.acceptance, pytest.mark.slow]

DAYS = ("2024-05-01", "2024-05-08")
RUNS = 8


@pytest.fixture
def collector() -> Iterator[Collector]:
    made = Collector()
    yield made
    made.close()


@pytest.fixture(params=["rabbitmq", "redis"])
def broker(request: pytest.FixtureRequest) -> str:
    return broker_url(str(request.param))


def test_dashboard_metrics_and_run_traces_on_celery(
    database_url: str, broker: str, marks: Path, collector: Collector
) -> None:
    with cluster(database_url, broker, marks) as c:
        c.env["BACKFILLER_OTLP_ENDPOINT"] = collector.url  # every process exports there
        ports = _start(c)
        metrics = [f"http://127.0.0.1:{port}/metrics" for port in ports]
        daemon, workers = metrics[0], metrics[1:]
        backfill = launch(c.api, "recorded", *DAYS, runConfig={"seconds": 0.5})
        # The daemon counts the worker processes it hears from (they report within 10 s).
        wait_for(
            "workers ready on the daemon",
            lambda: value(scrape(daemon), "backfiller_launcher_workers_ready") >= 1,
            timeout=60,
            every=0.2,
        )
        done = wait_status(c.api, backfill, {"COMPLETED_SUCCESS", "COMPLETED_FAILED"}, 90)
        assert done["status"] == "COMPLETED_SUCCESS"
        runs = c.runs(backfill)
        assert len(runs) == RUNS

        texts = [scrape(url) for url in metrics] + [scrape(f"{c.api.url}/metrics")]
        for text in texts:
            check_with_promtool(text)
        # The workers' own counters add up to the backfill's runs, exactly.
        executed = [
            value(scrape(url), "backfiller_worker_runs_total", job="recorded") for url in workers
        ]
        assert sum(executed) == RUNS, executed
        for url, worker in zip(workers, c.workers, strict=True):
            text = scrape(url)
            beating = {
                int(dict(labels)["pid"])
                for (name, labels) in samples(text)
                if name == "backfiller_worker_heartbeat_timestamp_seconds"
            }
            assert beating == set(worker.pool())
            assert value(text, "backfiller_worker_busy") == 0
        assert (
            sum(
                value(scrape(url), "backfiller_worker_start_delay_seconds_count") for url in workers
            )
            == RUNS
        )
        # Every metric the Grafana dashboard charts is exposed by one of the processes.
        dashboard = (REPO / "docs" / "grafana-dashboard.json").read_text()
        for name in sorted(set(re.findall(r"backfiller_[a-z_]+", dashboard))):
            name = name.removesuffix("_bucket")
            assert any(_exposes(text, name) for text in texts), name

        _check_traces(c, collector, runs)


def _start(c: Cluster) -> list[int]:
    """API, daemon and two workers, each with a metrics port: the daemon's port first."""
    ports = [free_port() for _ in range(3)]
    c.start_server()
    c.start_daemon("--metrics-port", str(ports[0]))
    for port in ports[1:]:
        c.start_worker(extra=("--metrics-port", str(port)))
    for worker in c.workers:
        worker.wait_ready()
    wait_for(
        "the metrics ports",
        lambda: all(answers(f"http://127.0.0.1:{port}/healthz") for port in ports),
        timeout=60,
    )
    return ports


def _check_traces(c: Cluster, collector: Collector, runs: list[dict[str, Any]]) -> None:
    def spans_named(prefix: str) -> list[dict[str, Any]]:
        return [s for s in collector.spans if s["name"].startswith(prefix)]

    def all_in() -> bool:
        return len(spans_named("run recorded")) >= RUNS and len(spans_named("execute ")) >= RUNS

    wait_for("every run's spans", all_in, timeout=60, every=0.5)  # exported in batches
    by_run = {s["attributes"]["backfiller.run_id"]: s for s in spans_named("run recorded")}
    output = "".join(w.output() for w in c.workers)
    for run in runs:
        parent = by_run[run["id"]]
        executed = [s for s in spans_named("execute recorded") if s["parent"] == parent["span"]]
        assert len(executed) == 1, run["id"]
        attributes = executed[0]["attributes"]
        assert attributes["backfiller.run_id"] == run["id"]
        assert attributes["backfiller.attempt"] == run["attempt"]
        assert attributes["backfiller.partition_key"] == run["partitionKey"]
        worker = run["worker"]
        assert attributes["backfiller.worker"].endswith(f":{worker['pid']}")
        # The worker's line about the run carries its trace.
        assert f"run_id={run['id']} trace_id={parent['trace']}" in output
    assert len(spans_named("execute ")) == RUNS
    # No statement is a trace of its own; the daemon's ticks hold theirs.
    roots = [s["name"] for s in spans_named("db ") if not s["parent"]]
    assert roots == []
    ticks = {s["span"] for s in spans_named("tick ")}
    assert any(s["parent"] in ticks for s in spans_named("db "))


def _exposes(text: str, name: str) -> bool:
    """Whether an exposition has ``name`` (a family, even one without samples yet)."""
    return re.search(rf"^(# (HELP|TYPE) )?{name}\b", text, re.M) is not None


def test_idle_workers_are_counted_ready_and_a_stopped_one_no_longer(
    database_url: str, broker: str, marks: Path
) -> None:
    """Issue 33: ``backfiller_launcher_workers_ready`` read 0 while 4 idle worker processes
    ran. Now each idle pool process tells the daemons it hears that it is there."""
    port = free_port()
    with cluster(database_url, broker, marks) as c:
        c.start_server()
        c.start_daemon("--metrics-port", str(port))
        first, second = c.start_worker(concurrency=2), c.start_worker(concurrency=2)
        for worker in c.workers:
            worker.wait_ready()
        wait_for(
            "the daemon's metrics port",
            lambda: answers(f"http://127.0.0.1:{port}/healthz"),
            timeout=60,
        )
        daemon = f"http://127.0.0.1:{port}/metrics"

        def ready() -> float:
            return value(scrape(daemon), "backfiller_launcher_workers_ready")

        wait_for("4 idle processes counted", lambda: ready() == 4, timeout=60, every=0.2)
        assert len(first.pool()) + len(second.pool()) == 4
        second.stop()  # its processes fall silent: gone from the count after the timeout
        wait_for("2 counted", lambda: ready() == 2, timeout=4 * c.heartbeat_timeout, every=0.2)
