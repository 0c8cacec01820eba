"""A connection's writes of one event-loop step go out in one call, in order, and none is
lost when the connection closes (``web/joined_writes.py``), over a real socket pair."""

from __future__ import annotations

import asyncio
import socket
from typing import Any

from backfiller.web.joined_writes import JoinedWrites


class Counted:
    """A real transport whose writes are counted."""

    def __init__(self, transport: asyncio.Transport) -> None:
        self.transport = transport
        self.writes = 0

    def write(self, data: bytes) -> None:
        self.writes += 1
        self.transport.write(data)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.transport, name)


async def connected() -> tuple[Counted, socket.socket]:
    ours, theirs = socket.socketpair()
    loop = asyncio.get_running_loop()
    transport, _ = await loop.create_connection(asyncio.Protocol, sock=ours)
    theirs.setblocking(False)
    return Counted(transport), theirs


async def received(peer: socket.socket, size: int) -> bytes:
    loop = asyncio.get_running_loop()
    got = b""
    while len(got) < size:
        chunk = await loop.sock_recv(peer, size - len(got))
        if not chunk:
            break
        got += chunk
    return got


async def test_the_writes_of_one_step_go_out_in_one_call_in_order() -> None:
    counted, peer = await connected()
    joined = JoinedWrites(counted, asyncio.get_running_loop())  # type: ignore[arg-type]
    joined.write(b"HTTP/1.1 200 OK\r\n\r\n")
    joined.write(b"body")
    assert counted.writes == 0  # held until the step ends
    assert await received(peer, 23) == b"HTTP/1.1 200 OK\r\n\r\nbody"
    assert counted.writes == 1
    joined.write(b"next")  # a later step: a write of its own
    assert await received(peer, 4) == b"next"
    assert counted.writes == 2
    joined.close()
    peer.close()


async def test_closing_writes_what_is_held_first_and_unwrap_hands_the_transport_back() -> None:
    counted, peer = await connected()
    joined = JoinedWrites(counted, asyncio.get_running_loop())  # type: ignore[arg-type]
    joined.write(b"last words")
    assert joined.unwrap() is counted  # type: ignore[comparison-overlap]  # held: written
    assert counted.writes == 1
    joined.write(b" and more")
    joined.close()
    assert joined.is_closing()
    assert await received(peer, 100) == b"last words and more"
    peer.close()
