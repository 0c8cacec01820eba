"""The UI's static files and operation document, over HTTP (the browser tests drive the rest)."""

from __future__ import annotations

import re
from pathlib import Path

import httpx
from graphql import OperationDefinitionNode, parse

from backfiller.config import Settings
from backfiller.definitions.loading import Definitions
from backfiller.resolvers.context import Services
from backfiller.storage import Database
from backfiller.web.app import create_app

REPO = Path(__file__).resolve().parents[2]
UI = REPO / "backfiller" / "web" / "ui"
CONTRACT = REPO / "contracts" / "v1" / "operations" / "web_ui.graphql"


def client(database: Database, definitions: Definitions) -> httpx.AsyncClient:
    services = Services(database=database, definitions=definitions, settings=Settings())
    transport = httpx.ASGITransport(app=create_app(services))
    return httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1")


async def test_the_ui_is_served_at_the_root_with_a_strict_policy(
    database: Database, definitions: Definitions
) -> None:
    async with client(database, definitions) as http:
        index = await http.get("/")
        assert index.status_code == 200
        assert '<script type="module" src="/ui/js/main.js">' in index.text
        policy = index.headers["content-security-policy"]
        assert "script-src 'self'" in policy and "unsafe" not in policy
        for path in re.findall(r'(?:src|href)="(/ui/[^"]+)"', index.text):
            assert (await http.get(path)).status_code == 200, path
        module = await http.get("/ui/js/main.js")
        media = module.headers["content-type"]
        assert media.startswith(("text/javascript", "application/javascript"))
        assert module.headers["cache-control"] == "no-cache"


async def test_the_operations_the_ui_sends_are_the_contract_file(
    database: Database, definitions: Definitions
) -> None:
    async with client(database, definitions) as http:
        served = await http.get("/ui/operations.graphql")
    assert served.status_code == 200
    assert served.text == CONTRACT.read_text()
    names = {
        d.name.value
        for d in parse(served.text).definitions
        if isinstance(d, OperationDefinitionNode) and d.name
    }
    used = set()
    for script in UI.rglob("*.js"):
        used |= set(re.findall(r'"(Ui[A-Z][A-Za-z]+)"', script.read_text()))
    assert used - names == set(), "the UI sends operations that are not in the contract file"
    assert names - used == set(), "operations in the contract file that the UI never sends"
