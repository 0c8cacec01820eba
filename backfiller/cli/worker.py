"""``backfiller worker``: a Celery worker that runs the jobs; and the daemon's Celery options."""

from __future__ import annotations

from typing import Annotated

import typer

from backfiller.cli.app import app
from backfiller.cli.server import (
    EXAMPLE_DEFINITIONS,
    DefinitionsOption,
    configure_logging,
    definitions_or_exit,
    fail,
)
from backfiller.launchers.celery.protocol import BROKER_ENV, QUEUE_ENV, default_queue

BrokerOption = Annotated[
    str | None,
    typer.Option(
        "--broker",
        envvar=BROKER_ENV,
        help="The Celery broker: amqp://user:password@host:5672// (RabbitMQ) or "
        "redis://host:6379/0.",
    ),
]
LauncherOption = Annotated[
    str,
    typer.Option(
        "--launcher",
        envvar="BACKFILLER_LAUNCHER",
        help="local: worker processes on this machine; celery: Celery workers "
        "(`backfiller worker`) anywhere, through --broker.",
    ),
]
HeartbeatTimeoutOption = Annotated[
    float,
    typer.Option(
        "--heartbeat-timeout",
        help="Celery launcher: a run whose worker is silent this long ends WORKER_LOST "
        "(and a run goes on through a broker outage of up to half of it).",
    ),
]


RunsPerTaskOption = Annotated[
    int,
    typer.Option(
        "--runs-per-task",
        help="Celery launcher: runs of a job whose runs are short (under 0.1 s lately) sent "
        "together in one task, at most; each still asks to start just before it runs. "
        "1 sends one run a task, as workers from before this option expect.",
    ),
]


def checked_broker(url: str | None) -> str:
    from backfiller.launchers.celery import broker_problem

    problem = broker_problem(url)
    if problem is not None:
        raise fail(problem)
    assert url is not None
    return url


@app.command()
def worker(
    definitions: DefinitionsOption = None,
    broker: BrokerOption = None,
    concurrency: Annotated[
        int | None,
        typer.Option("--concurrency", "-c", help="Runs at once (default: the CPU count)."),
    ] = None,
    queues: Annotated[
        list[str] | None,
        typer.Option(
            "--queues",
            "-Q",
            help="Celery queues to take runs from, comma-separated or repeated "
            f"(default: ${QUEUE_ENV}, or backfiller).",
        ),
    ] = None,
    hostname: Annotated[
        str | None, typer.Option("--hostname", "-n", help="Celery node name (name@host).")
    ] = None,
    api_url: Annotated[
        str | None,
        typer.Option(
            "--api-url",
            envvar="BACKFILLER_URL",
            help="URL of the service, given to runs for `context.client`.",
        ),
    ] = None,
    loglevel: Annotated[str, typer.Option("--loglevel", help="Celery's log level.")] = "WARNING",
) -> None:
    """Run a Celery worker that executes the jobs of your definitions.

    It needs the broker and the definitions only, never the database: runs start, report
    and end through the daemon that launched them.
    """
    configure_logging(loglevel)
    url = checked_broker(broker)
    if concurrency is not None and concurrency < 1:
        raise fail("--concurrency must be at least 1")
    names = [q.strip() for item in queues or [] for q in item.split(",") if q.strip()]
    defs = definitions_or_exit(definitions or EXAMPLE_DEFINITIONS)
    from backfiller.launchers.celery.worker import start_worker, worker_app

    start_worker(
        worker_app(url, defs, api_url),
        concurrency=concurrency,
        queues=names or [default_queue()],
        hostname=hostname,
        loglevel=loglevel,
    )
