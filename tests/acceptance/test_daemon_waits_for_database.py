"""A daemon started before its database answers waits for it, then runs backfills.

The database sits behind a TCP proxy that refuses every connection at first (a server still
starting, or out of reach), then forwards them. PostgreSQL only: a SQLite database is a file
of the daemon's own machine, with nothing to wait for.
"""

from __future__ import annotations

import re

import pytest
from sqlalchemy.engine import make_url

from tests.acceptance.daemon_support import Daemon, Proxy, launch, wait_for, wait_status
from tests.support import LiveServer

pytestmark = [pytest.mark.acceptance, pytest.mark.slow]

WAITING = re.compile(r"the database does not answer \(attempt (\d+): [^)\n]+\); trying again in")


@pytest.mark.postgresql_only("a SQLite database is a local file: there is nothing to wait for")
def test_a_daemon_waits_for_its_database_then_runs(database_url: str) -> None:
    url = make_url(database_url)
    proxy = Proxy(url.port or 5432)
    proxy.cut()  # refuses every connection until restored
    proxied = url.set(host="127.0.0.1", port=proxy.port).render_as_string(hide_password=False)
    daemon = Daemon(proxied, workers=1)
    server = None
    try:
        wait_for("three failed attempts", lambda: len(WAITING.findall(daemon.output())) >= 3, 30)
        assert daemon.proc.poll() is None, daemon.output()
        proxy.restore()
        wait_for("the daemon to start", lambda: "Backfiller daemon" in daemon.output(), 60)
        server = LiveServer(database_url, "tests.defs.jobs_daemon:definitions")
        backfill = launch(server, "noop", "2024-01-01", "2024-01-03")
        done = wait_status(server, backfill, {"COMPLETED_SUCCESS"}, timeout=60)
        assert done["counts"]["succeeded"] == 3
        output = daemon.output()
    finally:
        daemon.stop()
        if server is not None:
            server.stop()
        proxy.close()
    attempts = [int(n) for n in WAITING.findall(output)]
    assert attempts[:3] == [1, 2, 3], output  # one line per attempt, counted
    assert "Traceback" not in output
    delays = [float(d) for d in re.findall(r"trying again in ([\d.]+) s", output)]
    assert delays[:3] == [0.5, 1.0, 2.0]  # exponential backoff (capped at 30 s)
