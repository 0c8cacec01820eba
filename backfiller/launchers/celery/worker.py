"""``backfiller worker``: a real Celery worker that runs the jobs of the user's definitions."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Sequence
from typing import Any

from backfiller.launchers.celery.app import make_app
from backfiller.launchers.celery.poison import TASK_STRATEGY, opened_runs, watch_celery_consumer
from backfiller.launchers.celery.protocol import TASK_NAME, default_queue
from backfiller.launchers.celery.worker_logs import celery_options, json_lines_only


def worker_app(broker_url: str, definitions: Any, api_url: str | None = None) -> Any:
    """The Celery app of a worker, with the ``backfiller.run`` task bound to ``definitions``."""
    from celery.signals import worker_process_init

    from backfiller.launchers.celery.runner import link_for, run_deliveries

    app = make_app(broker_url)

    # Strategy: each task's runs are checked (signed, fresh...) before a pool process gets it.
    options = {"acks_late": True, "ignore_result": True, "Strategy": TASK_STRATEGY}

    @app.task(name=TASK_NAME, **options)  # type: ignore[untyped-decorator]
    def run(*messages: dict[str, Any]) -> str:
        # One argument per run: several short runs of one job may travel in one task.
        return run_deliveries(opened_runs(messages), definitions, broker_url, api_url)

    del run

    @worker_process_init.connect(weak=False)  # type: ignore[untyped-decorator]
    def own_process_group(**kwargs: Any) -> None:
        # Each pool process leads its own process group, so that a canceled or timed-out run
        # is stopped with its children (SIGKILL to the group) and nothing else.
        with contextlib.suppress(OSError):
            os.setsid()
        from backfiller.observability import worker_metrics

        worker_metrics.start()  # with --metrics-port: busy, runs, heartbeat of this process
        # Its line to the daemons now, not at its first run: idle, it tells them it is there
        # (``backfiller_launcher_workers_ready`` counts it).
        link_for(broker_url)

    del own_process_group
    watch_celery_consumer(app)  # what Celery drops itself is counted too
    return app


def start_worker(
    app: Any,
    *,
    concurrency: int | None,
    queues: Sequence[str],
    hostname: str | None = None,
    loglevel: str = "WARNING",
) -> None:
    """Run Celery's own worker in this process until it is stopped."""
    argv = [
        "worker",
        f"--loglevel={loglevel}",
        f"--queues={','.join(queues or [default_queue()])}",
        "--pool=prefork",
        "--without-gossip",
        "--without-mingle",
    ]
    if concurrency is not None:
        argv.append(f"--concurrency={concurrency}")
    # A node name of its own, so that several workers may run on one host.
    argv.append(f"--hostname={hostname or f'backfiller-{os.getpid()}@%h'}")
    json_lines_only()  # --log-format json: Celery's own lines are log lines too
    app.worker_main([*celery_options(), *argv])
