"""The long-running commands' event loop: uvloop, installed with uvicorn[standard]."""

from __future__ import annotations

import asyncio

import uvloop

from backfiller.event_loop import run_service


async def _loop_and_answer() -> tuple[asyncio.AbstractEventLoop, int]:
    await asyncio.sleep(0)
    return asyncio.get_running_loop(), 42


def test_a_service_runs_to_its_end_on_uvloop() -> None:
    loop, answer = run_service(_loop_and_answer())
    assert isinstance(loop, uvloop.Loop)
    assert answer == 42
    assert loop.is_closed()
