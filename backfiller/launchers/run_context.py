"""What every worker (the local pool's and Celery's) hands the user's function: the runnable of
a task and its ``RunContext``, in one place."""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from backfiller import ids
from backfiller.launchers.base import RunTask


def client_factory(api_url: str | None, credential: str | None) -> Callable[[], Any] | None:
    """What builds ``context.client``: a client of the API acting with the run's own
    credential (minted at claim time), never a token of the worker's; None without an API."""
    if not api_url:
        return None
    url = api_url

    def build() -> Any:
        from backfiller.client import Client  # type: ignore[attr-defined,unused-ignore]

        return Client(url, token=credential)

    return build


def prepare_run(
    definitions: Any, task: RunTask, handler: logging.Handler, api_url: str | None
) -> tuple[Callable[[Any], object], Any] | str:
    """The job (or asset) of ``task`` and the context to call it with, or why it cannot run.

    The run's log lines go to ``handler`` only (never to the worker's own log).
    """
    # Imported here: a worker process starts before the user's definitions are loaded.
    from backfiller.definitions.jobs import RunContext

    runnable = definitions.get_runnable(task.job_name)
    if runnable is None:
        return f"job {task.job_name!r} is not in the worker's definitions"
    logger = logging.Logger(f"backfiller.run.{task.job_name}", logging.DEBUG)
    logger.addHandler(handler)
    logger.propagate = False
    context = RunContext(
        job_name=task.job_name,
        partition_key=task.partition_key,
        partition_keys=task.partition_keys,
        partition_start=task.partition_start,
        partition_end=task.partition_end,
        run_id=ids.run_id(task.run_id),
        attempt=task.attempt,
        run_config=dict(task.run_config),
        tags=dict(task.tags),
        backfill_id=ids.backfill_id(task.backfill_id),
        log=logger,
        client_factory=client_factory(api_url, task.credential),
    )
    return runnable, context
