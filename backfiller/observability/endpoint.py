"""A small HTTP endpoint in a thread: ``/metrics``, ``/healthz`` and ``/readyz``.

The daemon serves it on ``--metrics-port`` (it has no other HTTP server); ``backfiller serve``
on ``--metrics-port`` too, for Prometheus to scrape without a token. It binds loopback unless
told otherwise. ``ready`` answers ``/readyz`` as ``(status, body)``; it runs in the endpoint's
thread, so it must only read what the process keeps in memory.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from backfiller.observability import exposition

Ready = Callable[[], tuple[int, dict[str, Any]]]


class _Handler(BaseHTTPRequestHandler):
    ready: Ready | None = None

    def do_GET(self) -> None:
        path = self.path.split("?", 1)[0]
        if path == "/metrics":
            self._answer(200, exposition.render(), exposition.CONTENT_TYPE)
        elif path == "/healthz":
            self._json(200, {"status": "ok"})
        elif path == "/readyz" and self.ready is not None:
            status, body = type(self).ready()  # type: ignore[misc]
            self._json(status, body)
        else:
            self._json(404, {"status": "not found"})

    def _json(self, status: int, body: dict[str, Any]) -> None:
        self._answer(status, json.dumps(body).encode(), "application/json")

    def _answer(self, status: int, body: bytes, content_type: str) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:
        """Scrapes are not worth a log line each."""


class Endpoint:
    def __init__(self, server: ThreadingHTTPServer, thread: threading.Thread) -> None:
        self.server = server
        self.thread = thread

    @property
    def port(self) -> int:
        return int(self.server.server_address[1])

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def start_endpoint(host: str, port: int, ready: Ready | None) -> Endpoint:
    handler = type("Handler", (_Handler,), {"ready": staticmethod(ready) if ready else None})
    server = ThreadingHTTPServer((host, port), handler)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, name="metrics-endpoint", daemon=True)
    thread.start()
    return Endpoint(server, thread)
