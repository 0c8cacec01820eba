"""Running a trigger's function: in its own thread, with a time limit.

A Python thread cannot be killed: one that runs past its limit is abandoned (a daemon
thread; nothing it returns or sets afterwards is used). While an abandoned thread of a
trigger still runs, the trigger is not started again (that evaluation fails at once), so a
trigger stuck for good costs one thread, not one per evaluation. This module keeps those
abandoned threads, per process.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import inspect
import logging
import threading
import traceback
from collections.abc import Awaitable
from dataclasses import dataclass

from backfiller.definitions.triggers import TriggerContext, TriggerDefinition

logger = logging.getLogger("backfiller.triggers")

MAX_MESSAGE = 2_000

_overdue: dict[str, threading.Thread] = {}
_overdue_lock = threading.Lock()


@dataclass(frozen=True, slots=True)
class Ran:
    """What the function returned, or why it did not (``error``, and its traceback)."""

    value: object = None
    error: str | None = None
    traceback: str | None = None


def _still_running(name: str) -> bool:
    with _overdue_lock:
        overdue = _overdue.get(name)
        if overdue is not None and overdue.is_alive():
            return True
        _overdue.pop(name, None)
        return False


def _start(
    definition: TriggerDefinition, context: TriggerContext
) -> tuple[threading.Thread, concurrent.futures.Future[object]]:
    future: concurrent.futures.Future[object] = concurrent.futures.Future()

    def work() -> None:
        if not future.set_running_or_notify_cancel():
            return
        try:
            result: object = definition.fn(context)
            if inspect.isawaitable(result):
                result = asyncio.run(_awaited(result))
        except Exception as exc:
            future.set_exception(exc)
        except BaseException as exc:  # SystemExit, KeyboardInterrupt: not the service's
            wrapped = RuntimeError(f"the trigger raised {type(exc).__name__}")
            wrapped.__cause__ = exc
            future.set_exception(wrapped)
        else:
            future.set_result(result)
        finally:
            try:
                context.close()
            except Exception:
                logger.exception("closing the client of trigger %s", definition.name)

    thread = threading.Thread(target=work, name=f"trigger-{definition.name}", daemon=True)
    thread.start()
    return thread, future


async def run_with_time_limit(
    definition: TriggerDefinition, context: TriggerContext, limit: float
) -> Ran:
    """Run the function in its own thread; give up waiting after ``limit`` seconds."""
    if _still_running(definition.name):
        return Ran(
            error="the previous evaluation is still running past its time limit; "
            "this one was not started"
        )
    thread, future = _start(definition, context)
    try:
        value = await asyncio.wait_for(asyncio.wrap_future(future), limit)
    except TimeoutError:
        with _overdue_lock:
            _overdue[definition.name] = thread
        logger.warning("trigger %s ran past its time limit of %g s", definition.name, limit)
        return Ran(error=f"the trigger ran past its time limit of {limit:g} s")
    except Exception as exc:
        text = "".join(traceback.format_exception(exc))
        logger.warning("trigger %s raised:\n%s", definition.name, text)
        return Ran(error=message_of(exc), traceback=text)
    return Ran(value=value)


async def _awaited(result: Awaitable[object]) -> object:
    return await result


def message_of(exc: BaseException) -> str:
    """What the caller is shown of an exception: its type and message, never a traceback."""
    text = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
    return text[:MAX_MESSAGE]


__all__ = ["MAX_MESSAGE", "Ran", "message_of", "run_with_time_limit"]
