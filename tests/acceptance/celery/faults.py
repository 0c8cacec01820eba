"""What the Celery fault tests judge, from the database and from the jobs' own marks.

The ``traced`` job (``defs.py``) marks that its body began (``began-<run id>``) and, at its end,
appends its execution to its partition's file. A run is judged by those marks, never by what
the daemon believes: executed twice (two ends of one partition), taken for never started though
its body began, or charged as failed (``FAILED``, ``WORKER_LOST``) though its body never began.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sqlalchemy import create_engine, text

from tests.acceptance.celery.support import executions, overlaps


@dataclass
class Verdict:
    runs: list[Any]
    doubled: dict[str, list[str]] = field(default_factory=dict)
    """Partitions whose job ran to its end more than once."""
    overlapping: list[str] = field(default_factory=list)
    began_but_not_started: list[int] = field(default_factory=list)
    """Runs recorded as never started (``CANCELED``, no failure) whose body began."""
    charged_but_never_began: list[int] = field(default_factory=list)
    """Runs recorded ``FAILED`` (``WORKER_LOST`` included) whose body never began."""
    executed_without_start: list[int] = field(default_factory=list)
    """Runs recorded ``SUCCESS`` with no ``startedAt``."""
    succeeded: dict[str, int] = field(default_factory=dict)
    """Per partition, its ``SUCCESS`` runs."""


def judge(database_url: str, marks: Path) -> Verdict:
    engine = create_engine(database_url)
    with engine.connect() as conn:
        runs = conn.execute(
            text(
                "SELECT id, partition_key, attempt, status, failure_reason, started_at, "
                "ended_at, error_message FROM runs ORDER BY id"
            )
        ).all()
    engine.dispose()
    began = {int(p.name.removeprefix("began-run_")) for p in marks.glob("began-run_*")}
    verdict = Verdict(list(runs))
    for key, ids in executions(marks).items():
        if len(ids) > 1:
            verdict.doubled[key] = ids
    verdict.overlapping = overlaps(marks)
    for run in runs:
        if run.status == "canceled" and run.id in began:
            verdict.began_but_not_started.append(run.id)
        if run.status == "failed" and run.id not in began:
            verdict.charged_but_never_began.append(run.id)
        if run.status == "success":
            verdict.succeeded[run.partition_key] = verdict.succeeded.get(run.partition_key, 0) + 1
            if run.started_at is None:
                verdict.executed_without_start.append(run.id)
    return verdict


def daemon_cuts(database_url: str, marks: Path, broker_name: str) -> Verdict:
    """Cut a daemon off from the broker ``CUTS`` times, each longer than a worker waits for its
    answers, during a backfill of ``traced`` 1-3 s runs on two workers; the verdict.

    The daemon reaches the broker through a TCP proxy the test cuts; the workers do not. Workers
    asking to start hear nothing, give up and say so; the daemon, reconnecting, reads the
    requests and the give-ups, and must charge nothing for a run that never began."""
    import time

    from tests.acceptance.celery.support import CeleryDaemon, broker_url, cluster
    from tests.acceptance.daemon_support import Proxy, launch, read, wait_for

    broker = broker_url(broker_name)
    port = PORTS[broker_name]
    proxy = Proxy(port)
    proxied = broker.replace(f":{port}", f":{proxy.port}")
    with cluster(database_url, broker, marks) as c:
        c.start_server()
        for _ in range(2):
            c.start_worker(concurrency=3)
        timeouts = ["--heartbeat-timeout", str(c.heartbeat_timeout), "--lease-timeout", "60"]
        daemon = CeleryDaemon(database_url, proxied, c.env, timeouts)
        c.daemons.append(daemon)
        for worker in c.workers:
            worker.wait_ready()
        config = {"seconds": 1.0, "spread": 1.0}
        backfill = launch(c.api, "traced", "2021-01-01", "2021-02-09", runConfig=config)

        def succeeded() -> int:
            return int(read(c.api, backfill)["counts"]["succeeded"])

        for cut in range(CUTS):
            goal = CUT_PARTITIONS * (cut + 1) / (CUTS + 2)
            wait_for(f"{goal:.0f} done", lambda: succeeded() >= goal, 120)  # noqa: B023
            proxy.cut()
            time.sleep(CUT_SECONDS)
            proxy.restore()

        def finished() -> bool:
            return str(read(c.api, backfill)["status"]).startswith("COMPLETED")

        wait_for("the backfill to complete", finished, timeout=120, every=0.5)
    proxy.close()
    return judge(database_url, marks)


PORTS = {"rabbitmq": 5672, "redis": 6379}
CUTS = 2
CUT_SECONDS = 20.0
"""Longer than a worker waits for its daemon's answer once it stops hearing from it."""
CUT_PARTITIONS = 40  # 2021-01-01 .. 2021-02-09


def assert_daemon_cuts_charge_nothing(database_url: str, marks: Path, broker_name: str) -> None:
    """Cut a daemon off ``broker_name`` twice (``daemon_cuts``) and judge the outcome: no run
    charged unless its job began, every partition executed once and recorded ``SUCCESS``."""
    verdict = daemon_cuts(database_url, marks, broker_name)
    assert verdict.charged_but_never_began == []
    assert verdict.began_but_not_started == []
    assert verdict.doubled == {}
    assert verdict.overlapping == []
    assert len(verdict.succeeded) == CUT_PARTITIONS and set(verdict.succeeded.values()) == {1}
