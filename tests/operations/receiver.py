"""A real webhook receiver on loopback, for the notification tests."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from backfiller.notify import signing


@dataclass
class Received:
    path: str
    headers: dict[str, str]
    body: bytes
    answered: int | None = None

    @property
    def json(self) -> Any:
        return json.loads(self.body)

    @property
    def delivery(self) -> str:
        return self.headers[signing.DELIVERY_HEADER.lower()]


# How to answer the n-th request (from 1) of one delivery id: a status, after a pause.
Script = Callable[[int], tuple[int, float]]


@dataclass
class Receiver:
    script: Script = lambda n: (200, 0.0)
    host: str = "127.0.0.1"
    received: list[Received] = field(default_factory=list)
    gate: threading.Event = field(default_factory=threading.Event)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def __post_init__(self) -> None:
        self.gate.set()
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length", "0"))
                item = Received(
                    self.path,
                    {k.lower(): v for k, v in self.headers.items()},
                    self.rfile.read(length),
                )
                with receiver.lock:
                    receiver.received.append(item)
                    n = sum(r.delivery == item.delivery for r in receiver.received)
                receiver.gate.wait(60)
                status, pause = receiver.script(n)
                time.sleep(pause)
                item.answered = status
                self.send_response(status)
                self.send_header("Content-Length", "2")
                self.end_headers()
                self.wfile.write(b"ok")

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer((self.host, 0), Handler)
        self.server.daemon_threads = True
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.server.server_address[1]}"

    def hold(self) -> None:
        """Answer nothing until :meth:`release`."""
        self.gate.clear()

    def release(self) -> None:
        self.gate.set()

    def snapshot(self) -> list[Received]:
        with self.lock:
            return list(self.received)

    def close(self) -> None:
        self.release()
        self.server.shutdown()
        self.server.server_close()
