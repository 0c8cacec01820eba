"""The Celery launcher: runs on Celery workers across machines (broker: RabbitMQ or Redis).

- :mod:`.protocol`: the messages between daemons and workers, and the names on the broker;
- :mod:`.app`: the Celery application both sides configure the same way;
- :mod:`.launcher`: the daemon's side (:class:`CeleryLauncher`), with its parts
  :mod:`.dispatch`, :mod:`.grants`, :mod:`.inbox`, :mod:`.acks`, :mod:`.liveness` and
  :mod:`.results` (sharing :mod:`.state`);
- :mod:`.runner` and :mod:`.link`: a worker process's side (the ``backfiller.run`` task);
- :mod:`.worker`: ``backfiller worker``, Celery's own worker with that task.

Importing this package does not import Celery; the modules that need it do. ``CELERY`` is the
launcher's plugin (``launchers.registry``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from backfiller.launchers.celery.protocol import BROKER_ENV
from backfiller.launchers.registry import LauncherConfig

if TYPE_CHECKING:
    from backfiller.launchers.celery.launcher import CeleryLauncher

__all__ = ["CELERY", "CeleryLauncher", "CeleryPlugin", "broker_problem"]

BROKER_SCHEMES = ("amqp", "amqps", "pyamqp", "redis", "rediss")


def broker_problem(url: str | None) -> str | None:
    """What is wrong with a broker URL, in one line (None: nothing)."""
    if not url:
        return f"the Celery launcher needs --broker (or ${BROKER_ENV})"
    scheme = url.partition("://")[0]
    if scheme not in BROKER_SCHEMES or "://" not in url:
        return f"--broker must be an amqp:// or redis:// URL, not {url!r}"
    return None


class CeleryPlugin:
    """``--launcher celery``: Celery workers anywhere, through a broker."""

    name = "celery"

    def problem(self, config: LauncherConfig) -> str | None:
        return broker_problem(config.broker)

    def build(self, config: LauncherConfig) -> CeleryLauncher:
        """The daemon's Celery launcher, started (its queue is named once the daemon has a
        lease)."""
        from backfiller.launchers.celery.launcher import CeleryLauncher

        assert config.broker is not None and config.definitions is not None
        return CeleryLauncher(
            config.broker,
            config.definitions,
            max_active=config.max_runs,
            runs_per_task=config.runs_per_task,
            grace_seconds=config.grace_seconds,
            heartbeat_timeout=config.heartbeat_timeout,
            api_url=config.api_url,
        ).start()

    def describe(self, owner: str, config: LauncherConfig) -> str:
        # The Celery workers are other processes, started and sized apart from the daemon.
        from backfiller.launchers.celery.protocol import default_queue
        from backfiller.observability.logs import redact

        return (
            f"Backfiller daemon {owner} running with the Celery launcher: broker "
            f"{redact(config.broker or '')}, runs on queue {default_queue()!r} "
            "(or their job's queue)"
        )


CELERY = CeleryPlugin()


def __getattr__(name: str) -> object:
    if name == "CeleryLauncher":
        from backfiller.launchers.celery.launcher import CeleryLauncher

        return CeleryLauncher
    raise AttributeError(name)
