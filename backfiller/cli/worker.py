"""``backfiller worker``: a Celery worker that runs the jobs; and the daemon's Celery options.

Secrets never need a command line (every local user can read it, a worker's pool processes
included): the broker's URL comes from ``$BACKFILLER_BROKER_URL`` or ``--broker-file``, the key
shared by daemons and workers from ``$BACKFILLER_BROKER_KEY`` or ``--broker-key-file``. A
password given in ``--broker`` itself works, with a warning.
"""

from __future__ import annotations

import logging
import os
import tempfile
from pathlib import Path
from typing import Annotated
from urllib.parse import urlsplit

import typer

from backfiller.cli.app import app
from backfiller.cli.server import (
    EXAMPLE_DEFINITIONS,
    DefinitionsOption,
    configure_logging,
    definitions_or_exit,
    fail,
)
from backfiller.collector import started
from backfiller.launchers.celery.protocol import BROKER_ENV, QUEUE_ENV, default_queue
from backfiller.logs import announce

BROKER_FILE_ENV = "BACKFILLER_BROKER_URL_FILE"

BrokerOption = Annotated[
    str | None,
    typer.Option(
        "--broker",
        envvar=BROKER_ENV,
        help="The Celery broker: amqp://user:password@host:5672// (RabbitMQ) or "
        f"redis://host:6379/0. Give a password through ${BROKER_ENV} or --broker-file "
        "rather than here: a command line is readable by every local user.",
    ),
]
BrokerFileOption = Annotated[
    str | None,
    typer.Option(
        "--broker-file",
        envvar=BROKER_FILE_ENV,
        help="A file whose first line is the broker's URL (instead of --broker).",
    ),
]
BrokerKeyFileOption = Annotated[
    str | None,
    typer.Option(
        "--broker-key-file",
        envvar="BACKFILLER_BROKER_KEY_FILE",
        help="A file holding the key that daemons and workers share to sign their messages "
        "(else $BACKFILLER_BROKER_KEY; make one with `backfiller worker "
        "--generate-broker-key`).",
    ),
]
InsecureBrokerOption = Annotated[
    bool,
    typer.Option(
        "--insecure-broker",
        help="Celery launcher without a shared key, for local experiments only: messages "
        "are not signed (anyone who can write to the broker is believed) and runs' "
        "credentials cross the broker in clear.",
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


ConcurrencyOption = Annotated[
    int | None,
    typer.Option("--concurrency", "-c", help="Runs at once (default: the CPU count)."),
]
QueuesOption = Annotated[
    list[str] | None,
    typer.Option(
        "--queues",
        "-Q",
        help="Celery queues to take runs from, comma-separated or repeated "
        f"(default: ${QUEUE_ENV}, or backfiller).",
    ),
]
HostnameOption = Annotated[
    str | None, typer.Option("--hostname", "-n", help="Celery node name (name@host).")
]
WorkerApiUrlOption = Annotated[
    str | None,
    typer.Option(
        "--api-url",
        envvar="BACKFILLER_URL",
        help="URL of the service, given to runs for `context.client`.",
    ),
]
WorkerMetricsPortOption = Annotated[
    int | None,
    typer.Option(
        "--metrics-port",
        help="Serve /metrics (busy processes, runs, heartbeats, refused messages) and "
        "/healthz here.",
    ),
]
WorkerMetricsHostOption = Annotated[
    str, typer.Option("--metrics-host", help="Address of --metrics-port (loopback).")
]


def _generate_key(value: bool) -> None:
    if value:
        from backfiller.launchers.celery.envelope import generate_key

        typer.echo(generate_key())
        raise typer.Exit(0)


GenerateKeyOption = Annotated[
    bool,
    typer.Option(
        "--generate-broker-key",
        is_eager=True,
        callback=_generate_key,
        help="Print a new key for $BACKFILLER_BROKER_KEY and exit.",
    ),
]


def warn_if_password(ctx: typer.Context, option: str, url: str | None, safer: str) -> None:
    """One line on stderr when ``option`` was given on the command line with a password."""
    name = option.removeprefix("--").replace("-", "_")
    source = ctx.get_parameter_source(name)
    if url is None or source is None or source.name != "COMMANDLINE":
        return
    try:
        password = urlsplit(url).password
    except ValueError:
        return
    if password:
        announce(
            f"{option} holds a password, on a command line that every local user can read; "
            f"give it through {safer} instead",
            logging.WARNING,
        )


def checked_broker(ctx: typer.Context, url: str | None, file: str | None = None) -> str:
    """The broker's URL, from ``--broker`` (or its variable) or ``--broker-file``; exits 2
    with one line when it is missing or wrong."""
    from backfiller.launchers.celery import broker_problem

    if url and file:
        raise fail(f"give --broker (or ${BROKER_ENV}) or --broker-file, not both")
    warn_if_password(ctx, "--broker", url, f"${BROKER_ENV} or --broker-file")
    if file:
        try:
            lines = Path(file).read_text().splitlines()
        except OSError as exc:
            raise fail(f"cannot read the broker file {file}: {exc.strerror or exc}") from None
        url = lines[0].strip() if lines else ""
        if not url:
            raise fail(f"the broker file {file} is empty")
    problem = broker_problem(url)
    if problem is not None:
        raise fail(problem)
    assert url is not None
    return url


def use_broker_key(key_file: str | None, insecure: bool) -> None:
    """Sign this process's messages with the shared key; exits 2 with one line (what to set,
    how to make a key) when there is none, unless ``insecure``."""
    from backfiller.launchers.celery import broker_key_problem
    from backfiller.launchers.celery import use_broker_key as use_key

    problem = broker_key_problem(key_file, insecure)
    if problem is not None:
        raise fail(problem)
    if insecure:
        announce(
            "--insecure-broker: messages through the broker are not signed and runs' "
            "credentials cross it in clear; for local experiments only",
            logging.WARNING,
        )
    use_key(key_file, insecure)


def serve_worker_metrics(port: int, host: str) -> None:
    """``/metrics`` of the worker and its pool processes, on ``port``: busy processes, runs
    by outcome, their duration and wait since publication, heartbeats, refused messages.

    Before anything imports prometheus_client: the pool processes record into files of its
    multiprocess mode (the directory their worker metrics record into too), which the main
    process's endpoint adds up."""
    from backfiller.observability.worker_metrics import MULTIPROC_VARIABLE, WORKER_DIR_VARIABLE

    path = tempfile.mkdtemp(prefix="backfiller-celery-metrics-")
    os.environ[MULTIPROC_VARIABLE] = path
    os.environ[WORKER_DIR_VARIABLE] = path  # each pool process starts its worker metrics
    from backfiller.web.metrics_port import start_endpoint

    try:
        start_endpoint(host, port, None)
    except OSError as exc:
        raise fail(f"cannot serve --metrics-port {port}: {exc.strerror or exc}") from None


@app.command()
def worker(
    ctx: typer.Context,
    definitions: DefinitionsOption = None,
    broker: BrokerOption = None,
    broker_file: BrokerFileOption = None,
    broker_key_file: BrokerKeyFileOption = None,
    insecure_broker: InsecureBrokerOption = False,
    concurrency: ConcurrencyOption = None,
    queues: QueuesOption = None,
    hostname: HostnameOption = None,
    api_url: WorkerApiUrlOption = None,
    metrics_port: WorkerMetricsPortOption = None,
    metrics_host: WorkerMetricsHostOption = "127.0.0.1",
    loglevel: Annotated[str, typer.Option("--loglevel", help="Celery's log level.")] = "WARNING",
    generate_broker_key: GenerateKeyOption = False,
) -> None:
    """Run a Celery worker that executes the jobs of your definitions.

    It needs the broker, the key it shares with the daemons, and the definitions; never the
    database: runs start, report and end through the daemon that launched them.
    """
    configure_logging(loglevel)
    url = checked_broker(ctx, broker, broker_file)
    if concurrency is not None and concurrency < 1:
        raise fail("--concurrency must be at least 1")
    use_broker_key(broker_key_file, insecure_broker)
    names = [q.strip() for item in queues or [] for q in item.split(",") if q.strip()]
    if metrics_port is not None:
        serve_worker_metrics(metrics_port, metrics_host)
    defs = definitions_or_exit(definitions or EXAMPLE_DEFINITIONS)
    from backfiller.launchers.celery.worker import start_worker, worker_app

    app = worker_app(url, defs, api_url)
    started()
    start_worker(
        app,
        concurrency=concurrency,
        queues=names or [default_queue()],
        hostname=hostname,
        loglevel=loglevel,
    )
