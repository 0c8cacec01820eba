"""The common GraphQL request body, read without strawberry's general parser.

Nearly every request is a POST of one JSON operation. For it, strawberry parses the
``Content-Type`` with the standard library's e-mail parser and the ``Accept`` header against
its streaming transports on every request, a noticeable share of a launch's CPU. This module
reads that one shape directly and answers ``None`` for anything else (a GET, another content
type, a batch, a stream asked for in ``Accept``, a field of the wrong type), which the view
then hands to strawberry's own parser, so every other body is read and refused exactly as
before.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from strawberry.http import GraphQLRequestData

if TYPE_CHECKING:
    from cross_web import AsyncHTTPRequestAdapter

_STREAMS = ("multipart/mixed", "text/event-stream")
"""Media types in ``Accept`` that ask strawberry for a streamed answer."""


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
