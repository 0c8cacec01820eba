"""Fixtures of the Celery launcher's acceptance tests."""

from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture
def marks(tmp_path: Path, is_postgres: bool) -> Path:
    """The folder where the test jobs mark their executions (see ``defs.py``).

    The Celery launcher's tests run on PostgreSQL (several daemons share the work): on SQLite
    they are skipped.
    """
    if not is_postgres:
        pytest.skip("the Celery launcher's tests run on PostgreSQL")
    folder = tmp_path / "marks"
    folder.mkdir()
    return folder
