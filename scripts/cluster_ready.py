"""Wait until every process of ``scripts/cluster.sh`` is ready; name those that are not.

    cluster_ready.py --timeout 120 --broker URL KIND:TARGET:LOG...

KIND is ``api`` (TARGET: its port; ready when ``/readyz`` answers 200: the database answers at
the migration head, the definitions are loaded), ``daemon`` (TARGET: its ``--metrics-port``;
ready when its ``/readyz`` answers 200, which needs its lease renewed and its loop passing) or
``worker`` (TARGET: its Celery node name; ready when it answers a ping through the broker, so it
consumes from the broker). Exits 0 once all are ready; otherwise, after ``--timeout`` seconds,
prints what each process still lacks and its log file, and exits 1.

The broker URL comes from ``$BACKFILLER_BROKER_URL`` when ``--broker`` is not given, so that it
never shows in a process list. Standard library and Celery only (the ``celery`` extra).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from typing import Any

POLL_SECONDS = 0.5
HTTP_TIMEOUT_SECONDS = 2.0
PING_TIMEOUT_SECONDS = 1.0
# Straight to loopback, whatever $http_proxy says.
OPENER = urllib.request.build_opener(urllib.request.ProxyHandler({}))


@dataclass
class Process:
    kind: str
    target: str
    log: str
    ready: bool = False
    lacking: str = "not checked yet"

    @property
    def name(self) -> str:
        if self.kind == "worker":
            return f"worker {self.target}"
        return f"{'API' if self.kind == 'api' else 'daemon'} on port {self.target}"


def parse(spec: str) -> Process:
    kind, _, rest = spec.partition(":")
    target, _, log = rest.partition(":")
    if kind not in ("api", "daemon", "worker") or not target or not log:
        raise SystemExit(f"cluster_ready.py: not KIND:TARGET:LOG: {spec!r}")
    return Process(kind, target, log)


def check_http(process: Process) -> None:
    """``/readyz`` of an API or a daemon: 200, or what its checks say is missing."""
    url = f"http://127.0.0.1:{process.target}/readyz"
    try:
        with OPENER.open(url, timeout=HTTP_TIMEOUT_SECONDS) as answer:
            process.ready = answer.status == 200
            process.lacking = "" if process.ready else f"/readyz answers {answer.status}"
    except urllib.error.HTTPError as error:  # 503: up, not ready; say which checks fail
        process.lacking = f"/readyz answers {error.code}{failing_checks(error.read())}"
    except (OSError, ValueError) as error:
        reason = getattr(error, "reason", error)
        process.lacking = f"/readyz does not answer ({reason})"


def failing_checks(body: bytes) -> str:
    try:
        checks: dict[str, Any] = json.loads(body)["checks"]
    except (ValueError, KeyError, TypeError):
        return ""
    failing = [f"{name} {c.get('detail', '')}".strip() for name, c in checks.items() if not c["ok"]]
    return f": not ok: {'; '.join(failing)}" if failing else ""


class Pinger:
    """Celery's remote-control ping, through the broker the workers consume from."""

    def __init__(self, broker: str) -> None:
        from celery import Celery

        self.app = Celery("backfiller-cluster-ready", broker=broker, set_as_current=False)
        self.app.conf.update(broker_connection_timeout=2, broker_connection_max_retries=1)

    def check(self, workers: list[Process]) -> None:
        waiting = [w for w in workers if not w.ready]
        if not waiting:
            return
        try:
            replies = self.app.control.ping(
                destination=[w.target for w in waiting], timeout=PING_TIMEOUT_SECONDS
            )
        except Exception as error:  # the broker is out of reach: say so, try again
            for worker in waiting:
                worker.lacking = f"the broker does not answer ({type(error).__name__})"
            return
        answered = {name for reply in replies or [] for name in reply}
        for worker in waiting:
            worker.ready = worker.target in answered
            worker.lacking = "" if worker.ready else "no answer to a ping through the broker"


def wait(processes: list[Process], broker: str | None, timeout: float) -> bool:
    workers = [p for p in processes if p.kind == "worker"]
    pinger = Pinger(broker) if workers and broker else None
    if workers and pinger is None:
        for worker in workers:
            worker.lacking = "no broker URL to ping it through"
    deadline = time.monotonic() + timeout
    while True:
        for process in processes:
            if process.kind != "worker" and not process.ready:
                check_http(process)
        if pinger is not None:
            pinger.check(workers)
        if all(p.ready for p in processes):
            return True
        if time.monotonic() >= deadline:
            return False
        time.sleep(POLL_SECONDS)


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--timeout", type=float, default=120.0)
    parser.add_argument("--broker", default=os.environ.get("BACKFILLER_BROKER_URL"))
    parser.add_argument("processes", nargs="+", metavar="KIND:TARGET:LOG")
    args = parser.parse_args(argv)
    processes = [parse(spec) for spec in args.processes]
    if wait(processes, args.broker, args.timeout):
        return 0
    late = [p for p in processes if not p.ready]
    print(f"error: not ready after {args.timeout:g} s:", file=sys.stderr)
    for process in late:
        print(f"  {process.name}: {process.lacking} (log: {process.log})", file=sys.stderr)
    return 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
