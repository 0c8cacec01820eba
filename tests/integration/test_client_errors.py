"""Transport failures of the client, sync and async: each raises its own exception class.

A small real HTTP server (stdlib) stands in for a proxy or a server that misbehaves; the
connection and timeout cases use real sockets.
"""

from __future__ import annotations

import json
import socket
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from backfiller import (
    AsyncClient,
    BackfillerAPIError,
    BackfillerAuthError,
    BackfillerConnectionError,
    BackfillerTransportError,
    BackfillerUserError,
    Client,
)

Answer = tuple[int, dict[str, str], bytes]


class Misbehaving:
    """Answers each POST with the next canned answer; remembers what it received."""

    def __init__(self) -> None:
        self.answer: Answer = (200, {}, b"{}")
        self.delay = 0.0
        self.received: list[tuple[dict[str, str], dict[str, Any]]] = []
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                length = int(self.headers.get("content-length", "0"))
                body = json.loads(self.rfile.read(length))
                outer.received.append(({k.lower(): v for k, v in self.headers.items()}, body))
                if outer.delay:
                    time.sleep(outer.delay)
                status, headers, payload = outer.answer
                self.send_response(status)
                for k, v in headers.items():
                    self.send_header(k, v)
                self.send_header("content-length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        self.thread = threading.Thread(
            target=self.httpd.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
        )
        self.thread.start()

    def json(self, status: int, body: object, **headers: str) -> None:
        self.answer = (
            status,
            {"content-type": "application/json", **headers},
            json.dumps(body).encode(),
        )

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture
def fake() -> Iterator[Misbehaving]:
    server = Misbehaving()
    yield server
    server.close()


def closed_port_url() -> str:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    return f"http://127.0.0.1:{port}"


def test_the_token_and_headers_are_sent_on_every_request(fake: Misbehaving) -> None:
    fake.json(200, {"data": {"jobs": []}})
    with Client(fake.url, token="s3cret", headers={"X-Backfiller-Run-Id": "run_3"}) as client:
        assert client.jobs() == []
    [(headers, body)] = fake.received
    assert headers["authorization"] == "Bearer s3cret"
    assert headers["x-backfiller-run-id"] == "run_3"
    assert headers["user-agent"].startswith("backfiller-python/")
    assert body["operationName"] == "PyJobs"
    assert body["query"].startswith("query PyJobs")
    assert "fragment PyJob on Job" in body["query"]
    # Only the fragments an operation uses are sent.
    assert "PyBackfill" not in body["query"]


def test_no_token_sends_no_authorization(fake: Misbehaving) -> None:
    fake.json(200, {"data": {"apiVersion": "v1"}})
    with Client(fake.url + "/graphql/v1/") as client:
        assert client.api_version() == "v1"
    [(headers, _)] = fake.received
    assert "authorization" not in headers


def test_a_server_that_cannot_be_reached_is_a_connection_error() -> None:
    with Client(closed_port_url()) as client, pytest.raises(BackfillerConnectionError) as failed:
        client.jobs()
    assert isinstance(failed.value, BackfillerTransportError)
    assert not isinstance(failed.value, BackfillerUserError)
    assert "cannot reach" in str(failed.value)


def test_no_answer_in_time_is_a_connection_error(fake: Misbehaving) -> None:
    fake.delay = 1.0
    fake.json(200, {"data": {"jobs": []}})
    with Client(fake.url, timeout=0.2) as client, pytest.raises(BackfillerConnectionError):
        client.jobs()


@pytest.mark.parametrize("status", [500, 502, 503])
def test_a_server_error_is_an_api_error_with_its_status_and_request_id(
    fake: Misbehaving, status: int
) -> None:
    fake.json(
        status,
        {
            "errors": [
                {"message": "Internal server error.", "extensions": {"code": "INTERNAL_ERROR"}}
            ]
        },
        **{"x-request-id": "abc123"},
    )
    with Client(fake.url) as client, pytest.raises(BackfillerAPIError) as failed:
        client.jobs()
    error = failed.value
    assert not isinstance(error, BackfillerAuthError)
    assert error.status_code == status
    assert error.request_id == "abc123"
    assert error.codes == ("INTERNAL_ERROR",)
    assert "abc123" in str(error)


def test_an_html_error_page_is_an_api_error(fake: Misbehaving) -> None:
    fake.answer = (502, {"content-type": "text/html"}, b"<html>Bad gateway</html>")
    with Client(fake.url) as client, pytest.raises(BackfillerAPIError) as failed:
        client.jobs()
    assert failed.value.status_code == 502


def test_a_body_that_is_not_json_is_an_api_error(fake: Misbehaving) -> None:
    fake.answer = (200, {"content-type": "application/json"}, b"{not json")
    with Client(fake.url) as client, pytest.raises(BackfillerAPIError, match="not a JSON"):
        client.jobs()


def test_top_level_graphql_errors_are_api_errors(fake: Misbehaving) -> None:
    fake.json(
        200,
        {
            "data": None,
            "errors": [{"message": "`first` must be at most 100", "extensions": {"code": "X"}}],
        },
    )
    with Client(fake.url) as client, pytest.raises(BackfillerAPIError) as failed:
        client.jobs()
    assert failed.value.messages == ("`first` must be at most 100",)
    assert failed.value.codes == ("X",)


def test_an_answer_of_the_wrong_shape_is_an_api_error(fake: Misbehaving) -> None:
    fake.json(200, {"data": {"jobs": [{"name": "half a job"}]}})
    with Client(fake.url) as client, pytest.raises(BackfillerAPIError, match="unexpected answer"):
        client.jobs()


@pytest.mark.parametrize("status", [401, 403])
def test_refused_credentials_are_an_auth_error(fake: Misbehaving, status: int) -> None:
    fake.json(status, {"errors": [{"message": "a token is required"}]})
    with Client(fake.url, token="bad") as client, pytest.raises(BackfillerAuthError) as failed:
        client.jobs()
    assert failed.value.status_code == status
    assert isinstance(failed.value, BackfillerAPIError)


def test_an_auth_code_in_top_level_errors_is_an_auth_error(fake: Misbehaving) -> None:
    fake.json(
        200,
        {"data": None, "errors": [{"message": "no", "extensions": {"code": "UNAUTHENTICATED"}}]},
    )
    with Client(fake.url) as client, pytest.raises(BackfillerAuthError):
        client.jobs()


async def test_the_async_client_raises_the_same_classes(fake: Misbehaving) -> None:
    async with AsyncClient(closed_port_url()) as client:
        with pytest.raises(BackfillerConnectionError):
            await client.jobs()
    fake.json(401, {"errors": [{"message": "no"}]})
    async with AsyncClient(fake.url, token="t") as client:
        with pytest.raises(BackfillerAuthError):
            await client.jobs()
    fake.json(500, {"errors": [{"message": "boom"}]})
    async with AsyncClient(fake.url) as client:
        with pytest.raises(BackfillerAPIError) as failed:
            await client.jobs()
    assert failed.value.status_code == 500
    assert fake.received[0][0]["authorization"] == "Bearer t"
