"""An OTLP/HTTP collector on loopback, for tests whose spans come from real processes."""

from __future__ import annotations

import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest


class Collector:
    """An OTLP/HTTP receiver on loopback: every span the workers export, as (name, ids)."""

    def __init__(self) -> None:
        self.spans: list[dict[str, Any]] = []
        """Each span: name, trace, span and parent ids (hex; no parent: ""), attributes."""
        collector = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers["Content-Length"]))
                request = ExportTraceServiceRequest.FromString(body)
                for resource in request.resource_spans:
                    for scope in resource.scope_spans:
                        for s in scope.spans:
                            collector.spans.append(
                                {
                                    "name": s.name,
                                    "trace": s.trace_id.hex(),
                                    "span": s.span_id.hex(),
                                    "parent": s.parent_span_id.hex(),
                                    "attributes": {
                                        a.key: a.value.string_value or a.value.int_value
                                        for a in s.attributes
                                    },
                                }
                            )
                self.send_response(200)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()
