"""The local launcher: a pool of persistent worker processes on this machine.

- :mod:`.launcher`: :class:`LocalLauncher`, the daemon's side;
- :mod:`.pool`: the worker processes, their signals, and what a dead one's runs become;
- :mod:`.dispatch`: the dispatcher thread (tasks to idle workers, timeouts, cancels);
- :mod:`.folder`: the results folder that outlives a daemon;
- ``launchers.worker``: the body of a worker process, and ``launchers.messages``: its pipe.
"""

from __future__ import annotations

import hashlib
import os
import tempfile
from pathlib import Path

from backfiller.launchers.local.launcher import LocalLauncher, default_worker_count
from backfiller.launchers.registry import LauncherConfig

__all__ = ["LOCAL", "LocalLauncher", "LocalPlugin", "default_results_dir", "default_worker_count"]


class LocalPlugin:
    """``--launcher local``: worker processes on this machine (see ``launchers.registry``)."""

    name = "local"

    def problem(self, config: LauncherConfig) -> str | None:
        return None  # --workers is checked for every launcher (cli.daemon)

    def build(self, config: LauncherConfig) -> LocalLauncher:
        from backfiller.observability.exposition import prepare_worker_metrics

        prepare_worker_metrics()  # before the workers start: they inherit where to record
        results_dir = config.results_dir
        if results_dir is None and config.database_url is not None:
            results_dir = default_results_dir(config.database_url)
        return LocalLauncher(
            config.definitions_target,
            config.workers,
            max_active=config.max_runs,
            grace_seconds=config.grace_seconds,
            api_url=config.api_url,
            token=config.token,
            results_dir=results_dir,
            database_url=config.database_url,
        ).start()

    def describe(self, owner: str, config: LauncherConfig) -> str:
        size = config.workers or default_worker_count()
        noun = "worker" if size == 1 else "workers"
        return f"Backfiller daemon {owner} running with {size} {noun}"


def default_results_dir(database_url: str) -> str:
    """A folder per database (and user) in the temporary directory."""
    digest = hashlib.sha256(database_url.encode()).hexdigest()[:16]
    return str(Path(tempfile.gettempdir()) / f"backfiller-results-{os.getuid()}" / digest)


LOCAL = LocalPlugin()
