"""The Celery launcher: runs on Celery workers across machines (broker: RabbitMQ or Redis).

- :mod:`.protocol`: the messages between daemons and workers, and the names on the broker;
- :mod:`.app`: the Celery application both sides configure the same way;
- :mod:`.launcher`: the daemon's side (:class:`CeleryLauncher`);
- :mod:`.runner` and :mod:`.link`: a worker process's side (the ``backfiller.run`` task);
- :mod:`.worker`: ``backfiller worker``, Celery's own worker with that task.

Importing this package does not import Celery; the modules that need it do.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from backfiller.launchers.celery.launcher import CeleryLauncher

__all__ = ["CeleryLauncher"]


def __getattr__(name: str) -> object:
    if name == "CeleryLauncher":
        from backfiller.launchers.celery.launcher import CeleryLauncher

        return CeleryLauncher
    raise AttributeError(name)
