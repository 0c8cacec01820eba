"""``backfiller daemon`` (runs backfills) and ``backfiller dev`` (API and daemon in one process)."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import hashlib
import os
import signal
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from backfiller.cli.app import app
from backfiller.cli.server import (
    EXAMPLE_DEFINITIONS,
    AllowedHostOption,
    DatabaseOption,
    DefinitionsOption,
    HostOption,
    OperationsPerSocketOption,
    OperationsPerTokenOption,
    PortOption,
    check_access_settings,
    configure_logging,
    definitions_or_exit,
    fail,
    prepare_database,
)
from backfiller.cli.worker import (
    BrokerOption,
    HeartbeatTimeoutOption,
    LauncherOption,
    RunsPerTaskOption,
    checked_broker,
)
from backfiller.config import AuthMode, Settings
from backfiller.definitions.loading import Definitions
from backfiller.event_loop import run_service
from backfiller.web.serving import http_server

if TYPE_CHECKING:
    from backfiller.daemon import Daemon
    from backfiller.notify.notifier import NotifierSettings

WorkersOption = Annotated[
    int | None,
    typer.Option(
        "--workers",
        envvar="BACKFILLER_WORKERS",
        help="Worker processes of the local launcher (default: the CPU count).",
    ),
]
MaxRunsOption = Annotated[
    int | None,
    typer.Option(
        "--max-runs",
        envvar="BACKFILLER_MAX_RUNS",
        help="Runs this daemon keeps active at once, queued and running "
        "(default: adaptive, at most 64 per worker).",
    ),
]
ApiUrlOption = Annotated[
    str | None,
    typer.Option(
        "--api-url",
        envvar="BACKFILLER_URL",
        help="URL of the service, given to runs for `context.client` (with $BACKFILLER_TOKEN).",
    ),
]
GraceOption = Annotated[
    float,
    typer.Option("--grace-seconds", help="Between SIGTERM and SIGKILL of a canceled run."),
]
LeaseOption = Annotated[
    float,
    typer.Option(
        "--lease-timeout",
        help="Length of the daemon's lease, in seconds: a daemon that cannot renew it stops "
        "its runs at 80% of it, and another daemon takes its runs over once it has expired.",
    ),
]
HeartbeatOption = Annotated[
    float | None,
    typer.Option(
        "--heartbeat-seconds",
        help="How often the lease is renewed (default: a fifteenth of --lease-timeout, at most 2).",
    ),
]
ResultsDirOption = Annotated[
    str | None,
    typer.Option(
        "--results-dir",
        envvar="BACKFILLER_RESULTS_DIR",
        help="Where workers keep each run's result until it is recorded, so that the next "
        "daemon on this machine records the runs that ended while their daemon was dead "
        "(default: a folder per database in the temporary directory).",
    ),
]


def default_results_dir(database_url: str) -> str:
    """A folder per database (and user) in the temporary directory."""
    digest = hashlib.sha256(database_url.encode()).hexdigest()[:16]
    return str(Path(tempfile.gettempdir()) / f"backfiller-results-{os.getuid()}" / digest)


MetricsPortOption = Annotated[
    int | None,
    typer.Option(
        "--metrics-port",
        envvar="BACKFILLER_METRICS_PORT",
        help="Serve /metrics (the daemon's and its workers'), /healthz and /readyz here.",
    ),
]
MetricsHostOption = Annotated[
    str, typer.Option("--metrics-host", help="Address of --metrics-port (loopback by default).")
]
NotifyUrlOption = Annotated[
    list[str] | None,
    typer.Option(
        "--notify-url",
        help="POST backfill lifecycle events to this webhook (repeat for more), signed with "
        "HMAC-SHA256 of $BACKFILLER_WEBHOOK_SECRET. Backfills add their own with `notify`.",
    ),
]
NotifyEventsOption = Annotated[
    str | None,
    typer.Option(
        "--notify-events",
        help="Comma-separated events for --notify-url: launched, paused, canceled, "
        "completed_success, completed_failed, failed, run_failed (default: all).",
    ),
]
NotifyFormatOption = Annotated[
    str, typer.Option("--notify-format", help='generic (JSON) or slack ({"text": ...}).')
]
NotifyTimeoutOption = Annotated[
    float,
    typer.Option(
        "--notify-timeout",
        help="Seconds one delivery attempt may take in all (connect, send, wait, read).",
    ),
]
WebhookAllowOption = Annotated[
    list[str] | None,
    typer.Option(
        "--webhook-allow",
        help="Let webhooks reach this network, address or host name (`10.0.0.0/8`, "
        "`hooks.internal`, `*.corp.example`) although it is inside (loopback, private, "
        "link-local...). Repeatable; $BACKFILLER_WEBHOOK_ALLOW adds more (comma-separated).",
    ),
]


@dataclasses.dataclass(frozen=True)
class DaemonOptions:
    target: str
    workers: int | None
    max_runs: int | None
    api_url: str | None
    grace_seconds: float
    lease_timeout: float
    heartbeat_seconds: float | None = None
    results_dir: str | None = None
    metrics_port: int | None = None
    metrics_host: str = "127.0.0.1"
    notify: NotifierSettings | None = None
    launcher: str = "local"
    broker: str | None = None
    heartbeat_timeout: float = 20.0
    runs_per_task: int = 8


def _stop_on_signals(stop: asyncio.Event) -> None:
    """SIGINT/SIGTERM set ``stop``. Plain handlers, so uvicorn can chain to them."""
    loop = asyncio.get_running_loop()

    def handle(signum: int, frame: object) -> None:
        loop.call_soon_threadsafe(stop.set)

    signal.signal(signal.SIGINT, handle)
    signal.signal(signal.SIGTERM, handle)


def build_daemon(database_url: str, defs: Definitions, options: DaemonOptions) -> Daemon:
    # Imported here so that `backfiller --help` and the client commands start fast.
    from backfiller.daemon import Daemon, DaemonSettings
    from backfiller.launchers import Launcher, LocalLauncher
    from backfiller.observability.exposition import prepare_worker_metrics
    from backfiller.storage import Database

    launcher: Launcher
    if options.launcher == "celery":
        from backfiller.cli.worker import celery_launcher

        launcher = celery_launcher(
            options.broker or "",
            defs,
            max_runs=options.max_runs,
            grace_seconds=options.grace_seconds,
            heartbeat_timeout=options.heartbeat_timeout,
            api_url=options.api_url,
            runs_per_task=options.runs_per_task,
        )
    else:
        prepare_worker_metrics()  # before the workers start: they inherit where to record
        launcher = LocalLauncher(
            options.target,
            options.workers,
            max_active=options.max_runs,
            grace_seconds=options.grace_seconds,
            api_url=options.api_url,
            token=os.environ.get("BACKFILLER_TOKEN") or None,
            results_dir=options.results_dir or default_results_dir(database_url),
        ).start()
    heartbeat = options.heartbeat_seconds or min(2.0, options.lease_timeout / 15)
    settings = DaemonSettings(
        max_runs=options.max_runs,
        lease_timeout_seconds=options.lease_timeout,
        heartbeat_seconds=heartbeat,
        shutdown_grace_seconds=options.grace_seconds,
    )
    daemon = Daemon(Database(database_url), defs, launcher, settings, api_url=options.api_url)
    from backfiller.notify.notifier import NotifierSettings
    from backfiller.notify.wiring import install_notifier
    from backfiller.web.daemon_ops import observe_daemon

    observe_daemon(daemon, options.metrics_port, options.metrics_host)
    install_notifier(daemon, options.notify or NotifierSettings())
    return daemon


def started_line(owner: str, options: DaemonOptions) -> str:
    """The line a daemon prints once started: where its runs go."""
    if options.launcher == "celery":
        # The Celery workers are other processes, started and sized apart from the daemon.
        from backfiller.launchers.celery.protocol import default_queue
        from backfiller.observability.logs import redact

        return (
            f"Backfiller daemon {owner} running with the Celery launcher: broker "
            f"{redact(options.broker or '')}, runs on queue {default_queue()!r} "
            "(or their job's queue)"
        )
    from backfiller.launchers.local import default_worker_count

    size = options.workers or default_worker_count()
    noun = "worker" if size == 1 else "workers"
    return f"Backfiller daemon {owner} running with {size} {noun}"


async def run_daemon(database_url: str, defs: Definitions, options: DaemonOptions) -> None:
    stop = asyncio.Event()
    _stop_on_signals(stop)
    daemon = build_daemon(database_url, defs, options)
    typer.echo(started_line(daemon.owner, options), err=True)
    try:
        await daemon.run(stop)
    finally:
        await daemon.database.dispose()


def _check_counts(
    workers: int | None,
    lease_timeout: float,
    heartbeat_seconds: float | None,
    launcher: str,
    runs_per_task: int,
) -> None:
    """The daemon's options that a value alone makes wrong: one line each, exit 2."""
    if workers is not None and workers < 1:
        raise fail("--workers must be at least 1")
    if lease_timeout <= 0 or (heartbeat_seconds is not None and heartbeat_seconds <= 0):
        raise fail("--lease-timeout and --heartbeat-seconds must be positive")
    if heartbeat_seconds is not None and heartbeat_seconds * 3 > lease_timeout * 0.8:
        raise fail("--heartbeat-seconds must leave several renewals within --lease-timeout")
    if launcher not in ("local", "celery"):
        raise fail("--launcher must be local or celery")
    if runs_per_task < 1:
        raise fail("--runs-per-task must be at least 1")


@app.command()
def daemon(
    definitions: DefinitionsOption = None,
    database: DatabaseOption = None,
    workers: WorkersOption = None,
    max_runs: MaxRunsOption = None,
    api_url: ApiUrlOption = None,
    grace_seconds: GraceOption = 5.0,
    lease_timeout: LeaseOption = 30.0,
    heartbeat_seconds: HeartbeatOption = None,
    results_dir: ResultsDirOption = None,
    metrics_port: MetricsPortOption = None,
    metrics_host: MetricsHostOption = "127.0.0.1",
    notify_url: NotifyUrlOption = None,
    notify_events: NotifyEventsOption = None,
    notify_format: NotifyFormatOption = "generic",
    notify_timeout: NotifyTimeoutOption = 10.0,
    webhook_allow: WebhookAllowOption = None,
    launcher: LauncherOption = "local",
    broker: BrokerOption = None,
    heartbeat_timeout: HeartbeatTimeoutOption = 20.0,
    runs_per_task: RunsPerTaskOption = 8,
) -> None:
    """Run backfills: plan, launch runs on local workers, watch, retry, finish."""
    configure_logging()
    _check_counts(workers, lease_timeout, heartbeat_seconds, launcher, runs_per_task)
    if launcher == "celery":
        broker = checked_broker(broker)
    target = definitions or EXAMPLE_DEFINITIONS
    defs = definitions_or_exit(target)
    url = prepare_database(database)
    from backfiller.notify.wiring import notifier_settings

    try:
        notify = notifier_settings(
            notify_url or [], notify_events, notify_format, notify_timeout, webhook_allow or []
        )
    except ValueError as exc:
        raise fail(str(exc)) from None
    options = DaemonOptions(
        target,
        workers,
        max_runs,
        api_url,
        grace_seconds,
        lease_timeout,
        heartbeat_seconds,
        results_dir,
        metrics_port,
        metrics_host,
        notify,
        launcher,
        broker,
        heartbeat_timeout,
        runs_per_task,
    )
    run_service(run_daemon(url, defs, options))


def _dev_settings(url: str, target: str, host: str, port: int, **given: object) -> Settings:
    overrides: dict[str, object] = {
        "database_url": url,
        "definitions": target,
        "host": host,
        "port": port,
        **given,
    }
    overrides["auth_mode"] = AuthMode.NONE  # the quick start is loopback-only
    settings = Settings.from_env(**overrides)
    check_access_settings(settings)  # --auth none refuses a non-loopback --host
    return settings


async def run_dev(defs: Definitions, settings: Settings, options: DaemonOptions) -> None:
    assert settings.database_url is not None
    stop = asyncio.Event()
    _stop_on_signals(stop)
    server = http_server(defs, settings)
    daemon = build_daemon(settings.database_url, defs, options)
    base = f"http://{settings.host}:{settings.port}"

    async def serve() -> None:
        with contextlib.suppress(SystemExit):  # uvicorn exits when it cannot bind
            await server.serve()

    server_task = asyncio.create_task(serve())
    daemon_task = asyncio.create_task(daemon.run(stop))
    while not server.started and not server_task.done():  # noqa: ASYNC110 (uvicorn has no event)
        await asyncio.sleep(0.05)
    if server.started:
        typer.echo(
            f"Backfiller is running: open {base}/ (API at {base}/graphql/v1). "
            "Press Ctrl+C to stop.",
            err=True,
        )
    await asyncio.wait({server_task, daemon_task}, return_when=asyncio.FIRST_COMPLETED)
    stop.set()
    server.should_exit = True
    await daemon_task
    with contextlib.suppress(Exception):
        await server_task
    await daemon.database.dispose()
    if server_task.done() and not server.started:
        raise fail(f"could not serve on {settings.host}:{settings.port}")


@app.command()
def dev(
    definitions: DefinitionsOption = None,
    database: DatabaseOption = None,
    host: HostOption = "127.0.0.1",
    port: PortOption = 8000,
    workers: WorkersOption = None,
    allowed_host: AllowedHostOption = None,
    max_operations_per_token: OperationsPerTokenOption = None,
    max_operations_per_socket: OperationsPerSocketOption = None,
) -> None:
    """The quick start: API, UI and daemon together, on SQLite, with the example jobs."""
    configure_logging("WARNING")
    target = definitions or EXAMPLE_DEFINITIONS
    defs = definitions_or_exit(target)
    url = prepare_database(database)
    if target == EXAMPLE_DEFINITIONS:
        from backfiller.examples.quickstart import land_example_export

        land_example_export()  # so the example trigger launches on its first press
    # Runs launched by the quick start talk back to this very server through context.client.
    options = DaemonOptions(target, workers, None, f"http://{host}:{port}", 5.0, 30.0)
    settings = _dev_settings(
        url,
        target,
        host,
        port,
        allowed_hosts=tuple(allowed_host or ()),
        max_operations_per_token=max_operations_per_token,
        max_operations_per_socket=max_operations_per_socket,
    )
    run_service(run_dev(defs, settings, options))
