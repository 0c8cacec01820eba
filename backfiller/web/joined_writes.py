"""A connection's writes of one step of the event loop sent in one call.

uvicorn writes an answer's head and its body separately, so every answer cost two ``send``
system calls (and two packets) where one does: on loopback, each call is several
microseconds of a small request's CPU. :class:`JoinedWrites` stands between an HTTP
connection and its transport: what is written during one step of the event loop is held and
written once, at the end of that step (``call_soon``), in the order written. Closing the
connection writes what is held first. A connection that becomes a WebSocket gets its own
transport back (``unwrap``), so the WebSocket protocol writes as it always did.
"""

from __future__ import annotations

import asyncio
from typing import Any


class JoinedWrites:
    """``transport``, with the writes of one step of ``loop`` joined (see the module)."""

    __slots__ = ("_held", "_loop", "_transport")

    def __init__(self, transport: asyncio.Transport, loop: asyncio.AbstractEventLoop) -> None:
        self._transport = transport
        self._loop = loop
        self._held: list[bytes] | None = None

    def write(self, data: bytes) -> None:
        if self._held is None:
            self._held = [data]
            self._loop.call_soon(self.flush)
        else:
            self._held.append(data)

    def flush(self) -> None:
        """Write what is held now."""
        held, self._held = self._held, None
        if held and not self._transport.is_closing():
            self._transport.write(held[0] if len(held) == 1 else b"".join(held))

    def close(self) -> None:
        self.flush()
        self._transport.close()

    def is_closing(self) -> bool:
        return self._transport.is_closing()

    def unwrap(self) -> asyncio.Transport:
        """The transport itself, after what is held was written."""
        self.flush()
        return self._transport

    def __getattr__(self, name: str) -> Any:
        # Everything else (reading's pause and resume, extra info, abort) is the transport's.
        return getattr(self._transport, name)
