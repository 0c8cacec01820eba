"""Under normal operation the Celery launcher publishes each run once.

Two daemons and two Celery workers (real processes, PostgreSQL), no kill and no cut: a backfill
of a few hundred partitions completes, every partition ran exactly once (the test job records
each execution, see ``defs.py``), and the daemons' ``backfiller_launcher_republished_total``
(scraped from their ``--metrics-port``) stays under 1% of the runs: a run waiting behind others
on its queue, or in a busy worker's hands, is not taken for lost.

The runs take 0.2 s each, so that the last ones wait on the queue longer than the launcher's
``OVERTAKEN_SECONDS`` (300 runs on 4 pool processes): before the launcher counted a run's wait
from when it was overtaken rather than from its publication, 13 to 15% of them were published
again in this test.
"""

from __future__ import annotations

from functools import partial
from pathlib import Path

import pytest

from tests.acceptance.celery.support import broker_url, cluster, executions, overlaps
from tests.acceptance.daemon_support import adds_up, launch, wait_for, wait_status
from tests.conftest import _empty_postgres
from tests.operations.support import scrape, value
from tests.support import answers, free_port

pytestmark = [pytest.mark.acceptance, pytest.mark.slow]

START, END, SIZE = "2023-01-01", "2023-10-27", 300
SECONDS = 0.2


@pytest.fixture(params=["rabbitmq", "redis"])
def broker(request: pytest.FixtureRequest, pg_template_url: str | None) -> str:
    if pg_template_url is None:
        pytest.skip("the Celery launcher's tests run on PostgreSQL")
    return broker_url(str(request.param))


def test_runs_are_published_once_and_run_once(
    pg_template_url: str, broker: str, marks: Path
) -> None:
    _empty_postgres(pg_template_url)
    ports = [free_port(), free_port()]
    with cluster(pg_template_url, broker, marks) as c:
        c.start_server()
        for port in ports:
            c.start_daemon("--metrics-port", str(port))
        for _ in range(2):
            c.start_worker()
        for worker in c.workers:
            worker.wait_ready()
        for port in ports:
            wait_for(
                "the daemon's metrics endpoint",
                partial(answers, f"http://127.0.0.1:{port}/healthz"),
                timeout=60,
            )

        backfill = launch(c.api, "recorded", START, END, runConfig={"seconds": SECONDS})
        done = wait_status(c.api, backfill, {"COMPLETED_SUCCESS", "COMPLETED_FAILED"}, 120)
        assert done["status"] == "COMPLETED_SUCCESS", done
        assert done["counts"]["succeeded"] == SIZE == done["counts"]["total"]
        assert adds_up(done["counts"])

        ran = executions(marks)
        assert len(ran) == SIZE
        assert {key: ids for key, ids in ran.items() if len(ids) != 1} == {}
        assert overlaps(marks) == []

        metrics = [scrape(f"http://127.0.0.1:{port}/metrics") for port in ports]
        assert all(
            'backfiller_launcher_republished_total{reason="overtaken"}' in m for m in metrics
        )
        republished = sum(value(m, "backfiller_launcher_republished_total") for m in metrics)
        started = sum(value(m, "backfiller_daemon_runs_total", event="started") for m in metrics)
        assert started == SIZE
        assert republished < SIZE / 100, (republished, [d.output()[-3000:] for d in c.daemons])
