"""Rendering ``/metrics``: this process's registry, plus the files of sibling processes.

Two multi-process layouts are served:

- ``backfiller serve --workers N``: every server process records into files under
  ``$PROMETHEUS_MULTIPROC_DIR`` (prometheus-client's multiprocess mode, set by the command
  before the processes start); any one of them renders the sum of all.
- ``backfiller daemon``: the daemon records in memory; its worker processes record into files
  under :data:`WORKER_DIR_VARIABLE`'s directory (see :mod:`.worker_metrics`), which the daemon
  adds to its own answer.
"""

from __future__ import annotations

import os
import tempfile

from prometheus_client import CONTENT_TYPE_LATEST, REGISTRY, CollectorRegistry, generate_latest
from prometheus_client.multiprocess import MultiProcessCollector, mark_process_dead

from backfiller.observability.worker_metrics import MULTIPROC_VARIABLE, WORKER_DIR_VARIABLE

CONTENT_TYPE = CONTENT_TYPE_LATEST


def multiprocess_dir() -> str | None:
    return os.environ.get(MULTIPROC_VARIABLE) or None


def prepare_multiprocess() -> str:
    """Before starting server processes: a fresh directory they will all record into."""
    path = tempfile.mkdtemp(prefix="backfiller-metrics-")
    os.environ[MULTIPROC_VARIABLE] = path
    return path


def prepare_worker_metrics() -> str:
    """Before starting worker processes: the directory they record into (inherited)."""
    path = os.environ.get(WORKER_DIR_VARIABLE)
    if not path:
        path = tempfile.mkdtemp(prefix="backfiller-worker-metrics-")
        os.environ[WORKER_DIR_VARIABLE] = path
    return path


def _forget_dead_processes(path: str) -> None:
    """Drop the live gauges of processes that exited (a killed worker never says so)."""
    for name in os.listdir(path):
        if not name.startswith("gauge_live"):
            continue
        pid_text = name.rsplit("_", 1)[-1].removesuffix(".db")
        if not pid_text.isdigit():
            continue
        try:
            os.kill(int(pid_text), 0)
        except ProcessLookupError:
            mark_process_dead(int(pid_text), path)  # type: ignore[no-untyped-call]
        except PermissionError:
            pass


def render() -> bytes:
    """The text exposition of every metric this process should answer for."""
    shared = multiprocess_dir()
    if shared:
        _forget_dead_processes(shared)
        registry = CollectorRegistry()
        MultiProcessCollector(registry, path=shared)  # type: ignore[no-untyped-call]
        body = generate_latest(registry)
    else:
        body = generate_latest(REGISTRY)
    workers = os.environ.get(WORKER_DIR_VARIABLE)
    if workers and os.path.isdir(workers) and workers != shared:
        _forget_dead_processes(workers)
        registry = CollectorRegistry()
        MultiProcessCollector(registry, path=workers)  # type: ignore[no-untyped-call]
        body += generate_latest(registry)
    return body
