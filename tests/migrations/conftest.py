"""What the migration tests share."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from bench.databases import scratch_postgres


@pytest.fixture
def fresh_url(tmp_path: Path) -> Iterator[str]:
    """An empty database of its own, not migrated (PostgreSQL when the tests run on it)."""
    server = os.environ.get("BACKFILLER_TEST_DATABASE_URL")
    if not server:
        yield f"sqlite:///{tmp_path / 'old.db'}"
        return
    with scratch_postgres(server, "bf_migrate") as url:
        yield url
