"""The start-up check of the schema's revision, done without Alembic, agrees with Alembic."""

from __future__ import annotations

from pathlib import Path

from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy import create_engine

from backfiller.storage.engine import sync_database_url
from backfiller.storage.migrations import (
    alembic_config,
    current_revision,
    head_revision,
    upgrade_database,
)


def alembic_current(url: str) -> str | None:
    engine = create_engine(sync_database_url(url))
    try:
        with engine.connect() as conn:
            return MigrationContext.configure(conn).get_current_revision()
    finally:
        engine.dispose()


def test_the_head_read_from_the_files_is_alembics() -> None:
    expected = ScriptDirectory.from_config(alembic_config("sqlite://")).get_current_head()
    assert expected is not None
    assert head_revision() == expected


def test_current_revision_reads_what_alembic_stamped(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'fresh.db'}"
    assert current_revision(url) is None  # no alembic_version table yet
    upgrade_database(url, "0001")
    assert current_revision(url) == alembic_current(url) == "0001"
    upgrade_database(url)  # from 0001 to the head
    assert current_revision(url) == alembic_current(url) == head_revision()
    upgrade_database(url)  # at the head already: nothing to do
    assert current_revision(url) == head_revision()
