"""The metrics port: ``/metrics``, ``/healthz`` and ``/readyz`` on an HTTP server of its own.

The daemon serves it on ``--metrics-port`` (it has no other HTTP server); ``backfiller serve``
on ``--metrics-port`` too, for Prometheus to scrape without a token. It binds loopback unless
told otherwise. ``ready`` answers ``/readyz`` as ``(status, body)``; it runs in the endpoint's
thread, so it must only read what the process keeps in memory.

It is served as the API's port is: by uvicorn, on an event loop in one thread of its own
(never a thread per connection), with the API's HTTP protocol (``web/protocol.py``: a client
gets ``BACKFILLER_CLIENT_TIMEOUT`` seconds to send its request, its head is bounded), and
at most :data:`MAX_CONNECTIONS` connections open at once (one more is closed as it opens).
Every answer carries the API's security headers. A ``Host`` that is a name must be one of
the names this port answers to (loopback names, the address it binds, the names given by
``--allowed-host`` on ``serve`` or ``$BACKFILLER_METRICS_ALLOWED_HOSTS``); otherwise the
answer is 421, so that a page on a rebound DNS name cannot read the exposition. An address
(``127.0.0.1:9465``, ``[::1]:9465``, ``10.0.0.5:9465``) is always answered: a rebinding
attack needs a name. ``/healthz`` answers any host.
"""

from __future__ import annotations

import asyncio
import ipaddress
import json
import logging
import os
import threading
import time
from collections.abc import Callable, Iterable
from typing import Any

from backfiller.observability import exposition

logger = logging.getLogger("backfiller.metrics")

Ready = Callable[[], tuple[int, dict[str, Any]]]
Send = Callable[[dict[str, Any]], Any]

MAX_CONNECTIONS = 64
ALLOWED_HOSTS_VARIABLE = "BACKFILLER_METRICS_ALLOWED_HOSTS"
LOOPBACK_NAMES = frozenset({"localhost", "127.0.0.1", "::1"})
START_SECONDS = 10.0


def host_name(value: str) -> str:
    """The host of a ``Host`` header, lowercased, without port, brackets or final dot."""
    value = value.strip().lower()
    if value.startswith("["):
        value = value[1 : value.find("]")] if "]" in value else value
    elif value.count(":") == 1:
        value = value.rsplit(":", 1)[0]
    return value.removesuffix(".")


def _is_address(name: str) -> bool:
    try:
        ipaddress.ip_address(name)
    except ValueError:
        return False
    return True


class HostNames:
    """The names a metrics port answers to (any address too)."""

    def __init__(self, bind_host: str, names: Iterable[str] = ()) -> None:
        given = os.environ.get(ALLOWED_HOSTS_VARIABLE, "").replace(",", " ").split()
        found = {host_name(n) for n in (*names, *given) if n}
        found |= LOOPBACK_NAMES
        if bind_host not in ("", "0.0.0.0", "::"):
            found.add(host_name(bind_host))
        self.names = frozenset(found)

    def allows(self, host: str | None) -> bool:
        if not host:
            return False
        name = host_name(host)
        return name in self.names or name.endswith(".localhost") or _is_address(name)


class MetricsApp:
    """The ASGI application of the metrics port."""

    def __init__(self, ready: Ready | None, hosts: HostNames) -> None:
        self.ready = ready
        self.hosts = hosts

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Send) -> None:
        if scope["type"] != "http":
            return
        try:
            await self._answer(scope, send)
        except Exception:
            # Masked, with the headers of every answer (the detail is in the log).
            logger.exception("the metrics port could not answer %s", scope["path"])
            await _json(send, 500, {"status": "internal server error"})

    async def _answer(self, scope: dict[str, Any], send: Send) -> None:
        path: str = scope["path"]
        host = next((v.decode("latin-1") for k, v in scope["headers"] if k == b"host"), None)
        if path != "/healthz" and not self.hosts.allows(host):
            await _json(send, 421, {"status": "host not allowed"})
        elif scope["method"] not in ("GET", "HEAD"):
            await _json(send, 405, {"status": "method not allowed"})
        elif path == "/metrics":
            await _answer(send, 200, exposition.render(), exposition.CONTENT_TYPE)
        elif path == "/healthz":
            await _json(send, 200, {"status": "ok"})
        elif path == "/readyz" and self.ready is not None:
            status, body = self.ready()
            await _json(send, status, body)
        else:
            await _json(send, 404, {"status": "not found"})


async def _json(send: Send, status: int, body: dict[str, Any]) -> None:
    await _answer(send, status, json.dumps(body).encode(), "application/json")


async def _answer(send: Send, status: int, body: bytes, content_type: str) -> None:
    from backfiller.web.headers import ALWAYS

    headers = [
        (b"content-type", content_type.encode()),
        (b"content-length", str(len(body)).encode()),
        *ALWAYS,
    ]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})


def capped_protocol(max_connections: int) -> type[asyncio.Protocol]:
    """The API's HTTP protocol, closing a connection that opens past ``max_connections``."""
    from uvicorn.importer import import_from_string

    from backfiller.web.protocol import PROTOCOL

    base: type[Any] = import_from_string(PROTOCOL)

    class CappedProtocol(base):  # type: ignore[misc]
        def connection_made(self, transport: asyncio.BaseTransport) -> None:
            super().connection_made(transport)
            if len(self.connections) > max_connections:
                transport.close()

    return CappedProtocol


class Endpoint:
    def __init__(self, server: Any, thread: threading.Thread) -> None:
        self.server = server
        self.thread = thread

    @property
    def port(self) -> int:
        return int(self.server.servers[0].sockets[0].getsockname()[1])

    def close(self) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=START_SECONDS)


def start_endpoint(
    host: str,
    port: int,
    ready: Ready | None,
    names: Iterable[str] = (),
    max_connections: int = MAX_CONNECTIONS,
) -> Endpoint:
    """Serve the metrics port in a thread; return once it listens.

    Raises:
        OSError: the port could not be bound.
    """
    import uvicorn

    config = uvicorn.Config(
        MetricsApp(ready, HostNames(host, names)),
        host=host,
        port=port,
        log_level="warning",
        access_log=False,
        lifespan="off",
        ws="none",
        http=capped_protocol(max_connections),
    )
    server = uvicorn.Server(config)
    thread = threading.Thread(
        target=lambda: asyncio.run(server.serve()), name="metrics-endpoint", daemon=True
    )
    thread.start()
    deadline = time.monotonic() + START_SECONDS
    while not server.started:
        if not thread.is_alive() or time.monotonic() > deadline:
            raise OSError(f"could not serve metrics on {host}:{port}")
        time.sleep(0.01)
    return Endpoint(server, thread)
