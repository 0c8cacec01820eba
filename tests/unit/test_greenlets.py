"""``run_sync`` behaves as SQLAlchemy's ``greenlet_spawn``, on greenlets used again."""

from __future__ import annotations

import asyncio
import contextvars
import gc
import weakref

import pytest
from sqlalchemy.util import await_

from backfiller.storage.greenlets import run_sync

request = contextvars.ContextVar("request", default="none")


async def test_a_call_returns_raises_and_waits_on_the_loop_in_the_callers_context() -> None:
    def waits(seconds: float) -> str:
        await_(asyncio.sleep(seconds))
        return request.get()

    def fails() -> None:
        raise LookupError("gone")

    async def caller(name: str) -> str:
        request.set(name)
        return await run_sync(waits, 0.01)

    assert await asyncio.gather(*(caller(f"r{i}") for i in range(20))) == [
        f"r{i}" for i in range(20)
    ]
    with pytest.raises(LookupError, match="gone"):
        await run_sync(fails)
    assert await run_sync(lambda a, b: a + b, 2, 3) == 5  # a greenlet that failed serves on


async def test_a_cancelled_caller_cancels_the_wait_inside() -> None:
    seen: list[str] = []

    def waits_long() -> None:
        try:
            await_(asyncio.sleep(10))
        except asyncio.CancelledError:
            seen.append("cancelled inside")
            raise

    task = asyncio.create_task(run_sync(waits_long))
    await asyncio.sleep(0.01)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert seen == ["cancelled inside"]
    assert await run_sync(lambda: "still serving") == "still serving"


async def test_an_idle_greenlet_holds_nothing_of_its_last_call() -> None:
    class Rows:
        pass

    made = Rows()
    seen = weakref.ref(made)
    returned = await run_sync(lambda rows: rows, made)
    assert returned is made
    del made, returned
    gc.collect()
    assert seen() is None  # neither the argument nor the result outlives the call
