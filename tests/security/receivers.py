"""Hostile webhook receivers on loopback: one that answers without end, one that trickles.

Each is a real HTTP server in threads of the test process; it records what it was sent and
how it behaved, so that tests compare the daemon's records with the receiver's own.
"""

from __future__ import annotations

import select
import socket
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

CHUNK = b"x" * 65536


@dataclass
class Hostile:
    """``answer(handler)`` writes the answer; the receiver counts requests and the
    connections open at once."""

    host: str = "127.0.0.1"
    requests: list[str] = field(default_factory=list)
    open_now: int = 0
    most_open: int = 0
    sent_bytes: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock)

    def __post_init__(self) -> None:
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_POST(self) -> None:
                self.rfile.read(int(self.headers.get("Content-Length", "0")))
                with receiver.lock:
                    receiver.requests.append(self.path)
                    receiver.open_now += 1
                    receiver.most_open = max(receiver.most_open, receiver.open_now)
                try:
                    receiver.answer(self)
                except OSError:
                    pass  # the daemon hung up: what it should do
                finally:
                    with receiver.lock:
                        receiver.open_now -= 1
                self.close_connection = True

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer((self.host, 0), Handler)
        self.server.daemon_threads = True
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def answer(self, handler: BaseHTTPRequestHandler) -> None:
        raise NotImplementedError

    def count(self, sent: int) -> None:
        with self.lock:
            self.sent_bytes += sent

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.server.server_address[1]}"

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@dataclass
class EndlessAnswer(Hostile):
    """200 with a body of ``size`` bytes, written as fast as the daemon takes it."""

    size: int = 256 * 1024 * 1024

    def answer(self, handler: BaseHTTPRequestHandler) -> None:
        handler.send_response(200)
        handler.send_header("Content-Type", "text/plain")
        handler.send_header("Content-Length", str(self.size))
        handler.end_headers()
        left = self.size
        while left > 0:
            piece = CHUNK[: min(left, len(CHUNK))]
            handler.wfile.write(piece)
            left -= len(piece)
            self.count(len(piece))


@dataclass
class Trickler(Hostile):
    """200, then one byte of its body every ``every`` seconds, for ``lasting`` seconds, or
    until the daemon hangs up (noticed at once: the connection is watched between bytes, so
    that the connections counted open are those the daemon holds)."""

    every: float = 1.0
    lasting: float = 60.0

    def answer(self, handler: BaseHTTPRequestHandler) -> None:
        handler.send_response(200)
        handler.send_header("Content-Length", "100000")
        handler.end_headers()
        handler.wfile.flush()
        until = time.monotonic() + self.lasting
        connection = handler.connection
        while time.monotonic() < until:
            readable, _, _ = select.select([connection], [], [], self.every)
            if readable and connection.recv(1, socket.MSG_PEEK) == b"":
                return  # the daemon hung up
            handler.wfile.write(b".")
            handler.wfile.flush()
            self.count(1)
