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

import os
from typing import TYPE_CHECKING

from backfiller.launchers.celery.envelope import (
    KEY_ENV,
    MISSING_KEY,
    KeyProblem,
    configure,
    key_from,
)
from backfiller.launchers.celery.protocol import BROKER_ENV
from backfiller.launchers.registry import LauncherConfig

if TYPE_CHECKING:
    from backfiller.launchers.celery.launcher import CeleryLauncher

__all__ = [
    "CELERY",
    "CeleryLauncher",
    "CeleryPlugin",
    "broker_key_problem",
    "broker_problem",
    "use_broker_key",
]

BROKER_SCHEMES = ("amqp", "amqps", "pyamqp", "redis", "rediss")


def broker_problem(url: str | None) -> str | None:
    """What is wrong with a broker URL, in one line (None: nothing)."""
    if not url:
        return f"the Celery launcher needs --broker (or ${BROKER_ENV})"
    scheme = url.partition("://")[0]
    if scheme not in BROKER_SCHEMES or "://" not in url:
        from backfiller.observability.redaction import redact

        return f"--broker must be an amqp:// or redis:// URL, not {redact(url)!r}"
    return None


def broker_key_problem(key_file: str | None, insecure: bool) -> str | None:
    """What is wrong with the key daemons and workers share (``$BACKFILLER_BROKER_KEY`` or
    ``key_file``), in one line (None: nothing; ``insecure``: none is wanted)."""
    given = bool(os.environ.get(KEY_ENV) or key_file)
    if insecure:
        return "give a broker key or --insecure-broker, not both" if given else None
    try:
        key = key_from(os.environ.get(KEY_ENV), key_file)
    except KeyProblem as exc:
        return str(exc)
    return MISSING_KEY if key is None else None


def use_broker_key(key_file: str | None, insecure: bool) -> None:
    """Seal this process's messages with the shared key (none: ``insecure``), and take the
    key out of the environment: the processes this one starts (a job's) do not inherit it.
    Raises ``KeyProblem`` (see :func:`broker_key_problem`)."""
    key = None if insecure else key_from(os.environ.get(KEY_ENV), key_file)
    if key is None and not insecure:
        raise KeyProblem(MISSING_KEY)
    configure(key)
    os.environ.pop(KEY_ENV, None)


class CeleryPlugin:
    """``--launcher celery``: Celery workers anywhere, through a broker."""

    name = "celery"

    def problem(self, config: LauncherConfig) -> str | None:
        return broker_problem(config.broker) or broker_key_problem(
            config.broker_key_file, config.insecure_broker
        )

    def build(self, config: LauncherConfig) -> CeleryLauncher:
        """The daemon's Celery launcher, started (its queue is named once the daemon has a
        lease)."""
        from backfiller.launchers.celery.launcher import CeleryLauncher

        assert config.broker is not None and config.definitions is not None
        use_broker_key(config.broker_key_file, config.insecure_broker)
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

        signed = "UNSIGNED (--insecure-broker)" if config.insecure_broker else "signed"
        return (
            f"Backfiller daemon {owner} running with the Celery launcher: broker "
            f"{redact(config.broker or '')}, runs on queue {default_queue()!r} "
            f"(or their job's queue), messages {signed}"
        )


CELERY = CeleryPlugin()


def __getattr__(name: str) -> object:
    if name == "CeleryLauncher":
        from backfiller.launchers.celery.launcher import CeleryLauncher

        return CeleryLauncher
    raise AttributeError(name)
