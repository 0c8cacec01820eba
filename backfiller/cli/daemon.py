"""``backfiller daemon`` (runs backfills) and ``backfiller dev`` (API and daemon in one process)."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
import os
import signal
import time
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
    BrokerFileOption,
    BrokerKeyFileOption,
    BrokerOption,
    HeartbeatTimeoutOption,
    InsecureBrokerOption,
    LauncherOption,
    RunsPerTaskOption,
    checked_broker,
    warn_if_password,
)
from backfiller.collector import started
from backfiller.config import AuthMode, Settings
from backfiller.definitions.loading import Definitions
from backfiller.event_loop import run_service
from backfiller.logs import announce
from backfiller.web.serving import http_server

if TYPE_CHECKING:
    from backfiller.daemon import Daemon
    from backfiller.launchers.registry import LauncherConfig
    from backfiller.notify.notifier import NotifierSettings

logger = logging.getLogger("backfiller.daemon")

DATABASE_WAIT_FIRST_SECONDS = 0.5
DATABASE_WAIT_MAX_SECONDS = 30.0
"""A daemon waiting for its database tries again after 0.5 s, doubling up to this."""
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
        "(default: adaptive, at most 64 per worker on SQLite, 512 on PostgreSQL).",
    ),
]
TeamMaxRunsOption = Annotated[
    int | None,
    typer.Option(
        "--team-max-runs",
        envvar="BACKFILLER_TEAM_MAX_RUNS",
        min=1,
        help="Runs of one team's backfills in flight at once, across daemons, unless an admin "
        "set the team a limit of its own (setTeamLimit). Default: no limit.",
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
NotifyRetryOption = Annotated[
    float,
    typer.Option(
        "--notify-retry-seconds",
        help="Wait before a failed delivery is tried again, doubled after each failure "
        "(at most 300 s, 8 attempts in all).",
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
    broker_key_file: str | None = None
    insecure_broker: bool = False
    team_max_runs: int | None = None


def _stop_on_signals(stop: asyncio.Event) -> None:
    """SIGINT/SIGTERM set ``stop``. Plain handlers, so uvicorn can chain to them."""
    loop = asyncio.get_running_loop()

    def handle(signum: int, frame: object) -> None:
        loop.call_soon_threadsafe(stop.set)

    signal.signal(signal.SIGINT, handle)
    signal.signal(signal.SIGTERM, handle)


def launcher_config(
    options: DaemonOptions, database_url: str | None = None, defs: Definitions | None = None
) -> LauncherConfig:
    """What the daemon's launcher plugin gets from the command line."""
    from backfiller.launchers.registry import LauncherConfig

    return LauncherConfig(
        definitions_target=options.target,
        definitions=defs,
        database_url=database_url,
        workers=options.workers,
        max_runs=options.max_runs,
        grace_seconds=options.grace_seconds,
        api_url=options.api_url,
        token=os.environ.get("BACKFILLER_TOKEN") or None,
        results_dir=options.results_dir,
        broker=options.broker,
        broker_key_file=options.broker_key_file,
        insecure_broker=options.insecure_broker,
        heartbeat_timeout=options.heartbeat_timeout,
        runs_per_task=options.runs_per_task,
    )


def build_daemon(database_url: str, defs: Definitions, options: DaemonOptions) -> Daemon:
    # Imported here so that `backfiller --help` and the client commands start fast.
    from backfiller.daemon import Daemon, DaemonSettings
    from backfiller.launchers.registry import launcher_plugins
    from backfiller.storage import Database

    plugin = launcher_plugins()[options.launcher]
    launcher = plugin.build(launcher_config(options, database_url, defs))
    heartbeat = options.heartbeat_seconds or min(2.0, options.lease_timeout / 15)
    settings = DaemonSettings(
        max_runs=options.max_runs,
        team_max_runs=options.team_max_runs,
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
    from backfiller.launchers.registry import launcher_plugins

    plugin = launcher_plugins()[options.launcher]
    return plugin.describe(owner, launcher_config(options))


async def run_daemon(database_url: str, defs: Definitions, options: DaemonOptions) -> None:
    stop = asyncio.Event()
    _stop_on_signals(stop)
    daemon = build_daemon(database_url, defs, options)
    announce(started_line(daemon.owner, options))
    started()
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
    from backfiller.launchers.registry import launcher_plugins

    names = list(launcher_plugins())
    if launcher not in names:
        raise fail(f"--launcher must be {', '.join(names[:-1])} or {names[-1]}")
    if runs_per_task < 1:
        raise fail("--runs-per-task must be at least 1")


def _check_launcher(name: str, config: LauncherConfig) -> None:
    """The launcher plugin's own check of its options: one line, exit 2."""
    from backfiller.launchers.registry import launcher_plugins

    problem = launcher_plugins()[name].problem(config)
    if problem is not None:
        raise fail(problem)
    if config.insecure_broker and name == "celery":
        announce(
            "--insecure-broker: messages through the broker are not signed and runs' "
            "credentials cross it in clear; for local experiments only",
            logging.WARNING,
        )


def waited_database(url: str | None) -> str:
    """The database URL, prepared (``prepare_database``) once its server answers: a server
    that does not answer yet (starting, restarting, unreachable) is asked again after 0.5 s,
    then a delay doubling up to 30 s, each failure logged in one line (no traceback)."""
    from backfiller.storage.engine import normalize_database_url
    from backfiller.storage.migrations import current_revision
    from backfiller.storage.reachability import unreachable_reason

    try:
        normalized = normalize_database_url(url)
    except Exception as exc:
        raise fail(f"bad database URL: {exc}") from None
    delay, attempt = DATABASE_WAIT_FIRST_SECONDS, 1
    while not normalized.startswith("sqlite"):  # SQLite is a file here: nothing to wait for
        try:
            current_revision(normalized)
            break
        except Exception as exc:
            reason = unreachable_reason(exc)
            if reason is None:
                break  # prepare_database says what it is, and exits
            logger.warning(
                "the database does not answer (attempt %d: %s); trying again in %.1f s",
                attempt,
                reason,
                delay,
            )
        time.sleep(delay)
        delay, attempt = min(DATABASE_WAIT_MAX_SECONDS, delay * 2), attempt + 1
    return prepare_database(normalized)


@app.command()
def daemon(
    ctx: typer.Context,
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
    notify_retry_seconds: NotifyRetryOption = 2.0,
    webhook_allow: WebhookAllowOption = None,
    launcher: LauncherOption = "local",
    broker: BrokerOption = None,
    broker_file: BrokerFileOption = None,
    broker_key_file: BrokerKeyFileOption = None,
    insecure_broker: InsecureBrokerOption = False,
    heartbeat_timeout: HeartbeatTimeoutOption = 20.0,
    runs_per_task: RunsPerTaskOption = 8,
    team_max_runs: TeamMaxRunsOption = None,
) -> None:
    """Run backfills: plan, launch runs on local workers, watch, retry, finish.

    It waits for its database to answer before it starts (a growing delay, up to 30 s)."""
    configure_logging()
    _check_counts(workers, lease_timeout, heartbeat_seconds, launcher, runs_per_task)
    warn_if_password(ctx, "--database", database, "$BACKFILLER_DATABASE_URL")
    if launcher == "celery":
        broker = checked_broker(ctx, broker, broker_file)
    options = DaemonOptions(
        definitions or EXAMPLE_DEFINITIONS, workers, max_runs, api_url, grace_seconds,
        lease_timeout, heartbeat_seconds, results_dir, metrics_port, metrics_host, None,
        launcher, broker, heartbeat_timeout, runs_per_task, broker_key_file, insecure_broker,
        team_max_runs,
    )  # fmt: skip
    _check_launcher(launcher, launcher_config(options))
    defs = definitions_or_exit(options.target)
    url = waited_database(database)
    from backfiller.notify.wiring import notifier_settings

    try:
        notify = notifier_settings(
            notify_url or [],
            notify_events,
            notify_format,
            notify_timeout,
            webhook_allow or [],
            retry_seconds=notify_retry_seconds,
        )
    except ValueError as exc:
        raise fail(str(exc)) from None
    run_service(run_daemon(url, defs, dataclasses.replace(options, notify=notify)))


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
    started()
    base = f"http://{settings.host}:{settings.port}"

    async def serve() -> None:
        with contextlib.suppress(SystemExit):  # uvicorn exits when it cannot bind
            await server.serve()

    server_task = asyncio.create_task(serve())
    daemon_task = asyncio.create_task(daemon.run(stop))
    while not server.started and not server_task.done():  # noqa: ASYNC110 (uvicorn has no event)
        await asyncio.sleep(0.05)
    if server.started:
        announce(
            f"Backfiller is running: open {base}/ (API at {base}/graphql/v1). "
            "Press Ctrl+C to stop.",
            verbatim=True,
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
    team_max_runs: TeamMaxRunsOption = None,
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
    options = DaemonOptions(
        target, workers, None, f"http://{host}:{port}", 5.0, 30.0, team_max_runs=team_max_runs
    )
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
