"""The common GraphQL request body, read without strawberry's general parser.

Nearly every request is a POST of one JSON operation. For it, strawberry parses the
``Content-Type`` with the standard library's e-mail parser and the ``Accept`` header against
its streaming transports on every request, a noticeable share of a launch's CPU. This module
reads that one shape directly and answers ``None`` for anything else (a GET, another content
type, a batch, a stream asked for in ``Accept``, a field of the wrong type), which the view
then hands to strawberry's own parser, so every other body is read and refused exactly as
before.

Every JSON the view reads (a body, GET's ``variables``, a WebSocket message) goes through
:func:`decode_json`: a number longer than the interpreter converts (4,300 digits) is a
:class:`RequestRefused`, answered 400 ``INVALID_ARGUMENT`` (an ``error`` message on a socket),
never an unexpected error.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from starlette.responses import JSONResponse
from strawberry.http import GraphQLRequestData

if TYPE_CHECKING:
    from cross_web import AsyncHTTPRequestAdapter

_STREAMS = ("multipart/mixed", "text/event-stream")
"""Media types in ``Accept`` that ask strawberry for a streamed answer."""

MAX_DIGITS = sys.get_int_max_str_digits() or 4300
TOO_LARGE = object()
"""Marks (as a key no JSON can hold) a socket message that held a number too long."""


class RequestRefused(Exception):
    """A request refused before it runs, with a status and a typed code."""

    def __init__(self, code: str, message: str, status: int = 400) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.status = status

    def response(self) -> JSONResponse:
        body = {"errors": [{"message": self.message, "extensions": {"code": self.code}}]}
        return JSONResponse(body, status_code=self.status)


def number_too_large() -> RequestRefused:
    return RequestRefused(
        "INVALID_ARGUMENT", f"a number in the request has more than {MAX_DIGITS} digits"
    )


def decode_json(data: str | bytes) -> object:
    """JSON as ``json.loads`` reads it, with its failures as ``JSONDecodeError`` (400 on
    HTTP, 4400 on a socket) but a number too long (:func:`number_too_large`).

    Raises:
        json.JSONDecodeError: not JSON, not UTF-8, or nested deeper than the parser goes.
        RequestRefused: a number of more than :data:`MAX_DIGITS` digits.
    """
    try:
        return json.loads(data)
    except RecursionError:
        raise json.JSONDecodeError("nested too deeply", "", 0) from None
    except json.JSONDecodeError:
        raise
    except UnicodeDecodeError:
        raise json.JSONDecodeError("not UTF-8", "", 0) from None
    except ValueError:
        # What json.loads raises but these: an integer past the interpreter's limit.
        raise number_too_large() from None


def _bounded_int(text: str) -> object:
    return int(text) if len(text) <= MAX_DIGITS else TOO_LARGE


def decode_socket_message(data: str | bytes) -> object:
    """A socket message: as :func:`decode_json`, but a message that holds a number too long
    is read (such numbers left out) and marked with :data:`TOO_LARGE`, for the socket's
    handler to answer its operation with an error."""
    try:
        return decode_json(data)
    except RequestRefused:
        found = json.loads(data, parse_int=_bounded_int)
        return {**found, TOO_LARGE: True} if isinstance(found, dict) else found


async def plain_json_operation(
    request: AsyncHTTPRequestAdapter, decode: Callable[[bytes], object]
) -> GraphQLRequestData | None:
    """The operation of a POST with a JSON object body, or ``None`` when the request has
    another shape (strawberry's parser then reads it). ``decode`` is the view's JSON decoder."""
    if request.method != "POST" or not _is_json(request.content_type):
        return None
    accept = request.headers.get("accept")
    if accept and any(stream in accept.lower() for stream in _STREAMS):
        return None
    try:
        data = decode(await request.get_body())
    except json.JSONDecodeError:
        return None
    if not isinstance(data, dict):
        return None
    query: Any = data.get("query")
    variables: Any = data.get("variables")
    extensions: Any = data.get("extensions")
    if (
        not isinstance(query, str | None)
        or not isinstance(variables, dict | None)
        or not isinstance(extensions, dict | None)
    ):
        return None
    return GraphQLRequestData(
        query=query,
        variables=variables,
        operation_name=data.get("operationName"),
        extensions=extensions,
        protocol="http",
    )


def _is_json(content_type: str | None) -> bool:
    if not content_type:
        return False
    # As strawberry compares it: "Application/JSON" is not taken (strawberry answers 400).
    return content_type.partition(";")[0].strip() == "application/json"
