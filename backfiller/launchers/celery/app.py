"""The Celery application both sides use: its settings, and the broker's own exchanges."""

from __future__ import annotations

from typing import Any

from backfiller.launchers.celery.envelope import leases_name
from backfiller.launchers.celery.protocol import (
    CONTROL_EXCHANGE,
    DAEMON_QUEUE_EXPIRES_SECONDS,
    DEFAULT_QUEUE,
    daemon_queue,
)

PREFETCH_MULTIPLIER = 4
"""Tasks a worker takes ahead per pool process (Celery's ``worker_prefetch_multiplier``): a
task may wait that many others' time in a busy worker's hands (see ``dispatch``)."""


def make_app(broker_url: str) -> Any:
    """A Celery app for ``broker_url`` (``amqp://...`` or ``redis://...``).

    The run's task is acknowledged late (once the run is over and its result is on the broker)
    so a worker that dies while holding a task gives it back to the broker; the redelivered
    copy then asks its daemon to start, and is refused: the attempt already started. The
    result backend is not used: results travel on Backfiller's own queues.
    """
    from celery import Celery

    app = Celery("backfiller", broker=broker_url, set_as_current=False)
    app.conf.update(
        task_acks_late=True,
        task_reject_on_worker_lost=False,
        task_default_queue=DEFAULT_QUEUE,
        task_serializer="json",
        accept_content=["json"],
        task_ignore_result=True,
        task_store_errors_even_if_ignored=False,
        worker_prefetch_multiplier=PREFETCH_MULTIPLIER,
        worker_hijack_root_logger=False,
        worker_redirect_stdouts=False,
        worker_cancel_long_running_tasks_on_connection_loss=False,
        worker_enable_remote_control=True,
        broker_connection_retry_on_startup=True,
        broker_connection_retry=True,
        broker_connection_max_retries=None,
        broker_transport_options={"visibility_timeout": 3600, "confirm_publish": True},
        broker_heartbeat=10,
        task_create_missing_queues=True,
    )
    return app


def control_exchange() -> Any:
    from kombu import Exchange

    return Exchange(CONTROL_EXCHANGE, type="direct", durable=True)


def lease_exchange() -> Any:
    from kombu import Exchange

    return Exchange(leases_name(), type="fanout", durable=False)  # one per shared key


def owner_queue(owner: str) -> Any:
    """The queue of the daemon whose lease owner is ``owner``: workers report there.

    Durable and neither exclusive nor auto-deleted, and the workers' messages to it are
    persistent: it outlives its daemon, so that the daemon taking over its runs reads what they
    did meanwhile (``results``), then deletes it.
    """
    from kombu import Queue

    name = daemon_queue(owner)
    return Queue(
        name,
        exchange=control_exchange(),
        routing_key=name,
        durable=True,
        auto_delete=False,
        exclusive=False,
        expires=DAEMON_QUEUE_EXPIRES_SECONDS,
    )
