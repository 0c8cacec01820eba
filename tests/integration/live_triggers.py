"""A live server over the trigger test definitions, shared by the tests of one module."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.support import LiveServer

DEFINITIONS = "tests.integration.trigger_defs:definitions"


@pytest.fixture(scope="module")
def server(module_database_url: str) -> Iterator[str]:
    """One server per test module (starting one costs seconds); tests keep apart by tagging
    what they create."""
    live = LiveServer(module_database_url, definitions=DEFINITIONS)
    try:
        yield live.url
    finally:
        live.stop()
