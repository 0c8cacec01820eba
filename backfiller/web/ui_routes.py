"""The browser UI: static ES modules served beside the API, and the operations they send.

The UI needs no build step: ``ui/`` holds plain HTML, CSS and JavaScript modules. The GraphQL
operations it sends live in one file, ``contracts/v1/operations/web_ui.graphql`` (validated
against the schema by the contract tests); ``ui/operations.graphql`` links to it, and the UI
loads it from ``/ui/operations.graphql``.
"""

from __future__ import annotations

import os
from os import PathLike
from pathlib import Path

from starlette.requests import Request
from starlette.responses import FileResponse, Response
from starlette.routing import BaseRoute, Mount, Route
from starlette.staticfiles import StaticFiles
from starlette.types import Scope

UI_DIR = Path(__file__).resolve().parent / "ui"
OPERATIONS = UI_DIR / "operations.graphql"

# Everything the UI loads comes from this server; the API is reached over fetch and WebSocket.
CONTENT_SECURITY_POLICY = (
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "connect-src 'self' ws: wss:; frame-ancestors 'none'; base-uri 'none'; form-action 'none'"
)
NO_CACHE = {"Cache-Control": "no-cache"}


async def index(request: Request) -> Response:
    headers = {**NO_CACHE, "Content-Security-Policy": CONTENT_SECURITY_POLICY}
    return FileResponse(UI_DIR / "index.html", headers=headers)


async def operations(request: Request) -> Response:
    return Response(
        OPERATIONS.read_text(encoding="utf-8"),
        media_type="application/graphql; charset=utf-8",
        headers=NO_CACHE,
    )


class RevalidatedStaticFiles(StaticFiles):
    """Static files that the browser revalidates (ETag) on every load: no stale UI after an
    upgrade, and no build step to fingerprint file names."""

    def file_response(
        self,
        full_path: PathLike[str] | str,
        stat_result: os.stat_result,
        scope: Scope,
        status_code: int = 200,
    ) -> Response:
        response = super().file_response(full_path, stat_result, scope, status_code)
        response.headers.update(NO_CACHE)
        return response


def ui_routes() -> list[BaseRoute]:
    """The routes of the UI: ``/`` and ``/ui/...``."""
    return [
        Route("/", index),
        Route("/ui/operations.graphql", operations),
        Mount("/ui", RevalidatedStaticFiles(directory=UI_DIR), name="ui"),
    ]
