"""GraphiQL, served from this package (no CDN): it works offline and loads no foreign code.

``graphiql/`` holds the page and, gzip-compressed, the builds of the npm packages ``graphiql``,
``react`` and ``react-dom`` (MIT; see ``graphiql/LICENSES.md``). They are sent compressed to
every browser that accepts gzip (all do), and decompressed for a client that does not.
"""

from __future__ import annotations

import gzip
from functools import cache
from pathlib import Path

from starlette.requests import Request
from starlette.responses import HTMLResponse, Response
from starlette.routing import BaseRoute, Route

GRAPHIQL_DIR = Path(__file__).resolve().parent / "graphiql"
ASSETS = {
    "graphiql.min.js": "text/javascript; charset=utf-8",
    "graphiql.min.css": "text/css; charset=utf-8",
    "react.production.min.js": "text/javascript; charset=utf-8",
    "react-dom.production.min.js": "text/javascript; charset=utf-8",
}


@cache
def page() -> str:
    return (GRAPHIQL_DIR / "index.html").read_text(encoding="utf-8")


@cache
def _compressed(name: str) -> bytes:
    return (GRAPHIQL_DIR / f"{name}.gz").read_bytes()


def graphiql_page() -> HTMLResponse:
    return HTMLResponse(page(), headers={"Cache-Control": "no-cache"})


async def asset(request: Request) -> Response:
    name = request.path_params["name"]
    media = ASSETS.get(name)
    if media is None:
        return Response("not found", status_code=404, media_type="text/plain")
    body = _compressed(name)
    headers = {"Cache-Control": "public, max-age=86400", "Vary": "Accept-Encoding"}
    if "gzip" in request.headers.get("accept-encoding", "").lower():
        headers["Content-Encoding"] = "gzip"
    else:
        body = gzip.decompress(body)
    return Response(body, media_type=media, headers=headers)


def graphiql_routes() -> list[BaseRoute]:
    return [Route("/graphiql/assets/{name}", asset)]
