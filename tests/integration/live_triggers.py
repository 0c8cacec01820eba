"""A live server over the trigger test definitions, shared by the tests of one module."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy import create_engine, text

from backfiller.storage.metadata import metadata
from backfiller.storage.migrations import upgrade_database
from tests.support import LiveServer

DEFINITIONS = "tests.integration.trigger_defs:definitions"


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory, pg_template_url: str | None) -> Iterator[str]:
    """One server per test module (starting one costs seconds); tests keep apart by tagging
    what they create."""
    if pg_template_url is not None:
        engine = create_engine(pg_template_url)
        tables = ", ".join(f'"{t.name}"' for t in metadata.sorted_tables)
        with engine.begin() as conn:
            conn.execute(text(f"TRUNCATE {tables} RESTART IDENTITY CASCADE"))
        engine.dispose()
        url = pg_template_url
    else:
        path: Path = tmp_path_factory.mktemp("live") / "backfiller.db"
        url = f"sqlite:///{path}"
        upgrade_database(url)
    live = LiveServer(url, definitions=DEFINITIONS)
    try:
        yield live.url
    finally:
        live.stop()
