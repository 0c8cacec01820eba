"""Wiring a running daemon for operators: gauges, a refresh task, and its HTTP endpoint."""

from __future__ import annotations

from typing import Any

from backfiller.observability import daemon_metrics, health
from backfiller.web.metrics_port import Endpoint, start_endpoint

REFRESH_SECONDS = 5.0
STALE_TICK_SECONDS = 15.0


class DaemonHealth:
    """What ``/readyz`` of the daemon answers, from facts kept in memory (the endpoint's
    thread never touches the database): the last database check, made by the refresh task,
    and how long ago the loop passed."""

    def __init__(self, definitions: Any, lease_timeout_seconds: float) -> None:
        self.definitions = definitions
        self.lease_timeout_seconds = lease_timeout_seconds
        self.database: list[health.Check] = [health.Check("database", False, "not checked yet")]

    async def refresh(self, database: Any, now: Any) -> None:
        self.database = await health.database_checks(database)
        if self.database[0].ok:
            await daemon_metrics.refresh_from_database(database, now)

    def ready(self) -> tuple[int, dict[str, Any]]:
        since = daemon_metrics.seconds_since_tick()
        lease = daemon_metrics.seconds_since_ok("lease")
        checks = [
            *self.database,
            health.definitions_check(self.definitions),
            health.Check(
                "loop",
                since is not None and since < STALE_TICK_SECONDS,
                f"last pass {since:.1f} s ago" if since is not None else "no pass yet",
            ),
            health.Check(
                "lease",
                lease is not None and lease < self.lease_timeout_seconds,
                f"renewed {lease:.1f} s ago" if lease is not None else "never renewed",
            ),
        ]
        return health.as_json(checks)


def observe_daemon(daemon: Any, port: int | None, host: str = "127.0.0.1") -> Endpoint | None:
    """Register the refresh task on the daemon's loop, watch its launcher, and serve
    ``/metrics``, ``/healthz`` and ``/readyz`` on ``port`` (none when it is None)."""
    state = DaemonHealth(daemon.definitions, daemon.settings.lease_timeout_seconds)
    daemon_metrics.watch_launcher(daemon.launcher)

    async def refresh() -> None:
        await state.refresh(daemon.database, daemon.clock())

    daemon.loop.every(REFRESH_SECONDS, "metrics", refresh)
    if port is None:
        return None
    return start_endpoint(host, port, state.ready)
