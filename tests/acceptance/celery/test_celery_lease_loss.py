"""A Celery daemon that loses its lease starts over under a new name, on a new queue.

PostgreSQL and RabbitMQ; API, one daemon and two Celery workers as real processes. The daemon
reaches PostgreSQL through a TCP proxy the test cuts for longer than its lease: it stops its
runs, logs that it lost its lease and starts over as a new owner, which names a new queue.
Once the link is back, it takes its former name's runs over (from the old queue: results
that arrived meanwhile, or that it had received and not written) and goes on, its new runs
reporting to its new queue. The backfill completes; every partition succeeded once and ran to
its end once, never two executions of a partition at the same time; and runs leased to a new
name succeeded, which they could only do through a new queue.
"""

from __future__ import annotations

import re
import time
from collections import Counter
from pathlib import Path

import pytest
from sqlalchemy import create_engine, text
from sqlalchemy.engine import make_url

from tests.acceptance.celery.support import broker_url, cluster, executions, overlaps, owner_of
from tests.acceptance.daemon_support import Proxy, launch, read, wait_for, wait_status

pytestmark = [pytest.mark.acceptance, pytest.mark.slow]

LEASE_SECONDS = 6
OUTAGE_SECONDS = 9


def test_a_daemon_that_loses_its_lease_goes_on_under_a_new_name_and_queue(
    database_url: str, marks: Path
) -> None:
    broker = broker_url("rabbitmq")
    url = make_url(database_url)
    proxy = Proxy(url.port or 5432)
    proxied = url.set(host="127.0.0.1", port=proxy.port).render_as_string(hide_password=False)
    try:
        with cluster(database_url, broker, marks) as c:
            c.start_server()
            workers = [c.start_worker(), c.start_worker()]
            c.database_url = proxied  # the daemon's link is the one cut
            daemon = c.start_daemon("--lease-timeout", str(LEASE_SECONDS))
            for worker in workers:
                worker.wait_ready()
            backfill = launch(
                c.api, "recorded", "2022-01-01", "2022-12-31", runConfig={"seconds": 0.05}
            )
            wait_for("runs to succeed", lambda: read(c.api, backfill)["counts"]["succeeded"] > 20)
            first = owner_of(daemon.output())
            proxy.cut()
            time.sleep(OUTAGE_SECONDS)
            proxy.restore()
            done = wait_status(c.api, backfill, {"COMPLETED_SUCCESS", "COMPLETED_FAILED"}, 180)
            log = daemon.output()
    finally:
        proxy.close()

    lost = re.search(rf"daemon {re.escape(first)} lost its lease .*?starting over as (\S+)", log)
    assert lost is not None, log
    second = lost.group(1)
    assert done["status"] == "COMPLETED_SUCCESS", done
    total = done["counts"]["total"]
    assert done["counts"]["succeeded"] == total == 365

    engine = create_engine(database_url)
    with engine.connect() as conn:
        rows = conn.execute(
            text("SELECT partition_key, status, lease_owner FROM runs WHERE backfill_id = :b"),
            {"b": int(backfill[3:])},
        ).all()
    engine.dispose()
    successes = Counter(key for key, status, _ in rows if status == "success")
    assert len(successes) == total and set(successes.values()) == {1}
    # Under a loaded machine the daemon may lose its lease more than once: any name after the
    # first is a new queue.
    later = [key for key, status, owner in rows if status == "success" and owner != first]
    assert later, f"runs of a later name ({second}, ...) succeeded: the daemon read its new queue"
    assert overlaps(marks) == []
    ran = executions(marks)
    assert Counter({key: len(ids) for key, ids in ran.items()}) == Counter(
        dict.fromkeys(successes, 1)
    )
