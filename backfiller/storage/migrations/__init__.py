"""Alembic migrations of the private schema, and running them."""

from __future__ import annotations

import re
from pathlib import Path
from typing import TYPE_CHECKING

from sqlalchemy import create_engine, inspect, text

from backfiller.storage.engine import sync_database_url

if TYPE_CHECKING:
    from alembic.config import Config

HERE = Path(__file__).parent
_REVISION = re.compile(r"^(down_)?revision(?::[^=]*)?=\s*(None|['\"]([^'\"]+)['\"])", re.M)

# Alembic is imported inside the functions that run it: a server whose database is already
# at the head revision (every start but the first) checks that with one query and never
# loads Alembic, Mako and their plugins (about 9 MB of the idle API process, and part of its
# start-up time).


def alembic_config(url: str) -> Config:
    from alembic.config import Config

    config = Config()
    config.set_main_option("script_location", str(HERE))
    config.set_main_option("sqlalchemy.url", sync_database_url(url).replace("%", "%%"))
    return config


def upgrade_database(url: str, revision: str = "head") -> None:
    """Bring the database at ``url`` to ``revision`` (the newest by default)."""
    if revision == "head":
        head = head_revision()
        if head is not None and current_revision(url) == head:
            return
    from alembic import command

    command.upgrade(alembic_config(url), revision)


def current_revision(url: str) -> str | None:
    """The revision stamped in the database (Alembic's ``alembic_version``), or None."""
    engine = create_engine(sync_database_url(url))
    try:
        with engine.connect() as conn:
            if not inspect(conn).has_table("alembic_version"):
                return None
            rows = conn.execute(text("SELECT version_num FROM alembic_version")).scalars().all()
            return rows[0] if len(rows) == 1 else None
    finally:
        engine.dispose()


def head_revision() -> str | None:
    """The newest revision: the one that no migration names as its ``down_revision``.

    Read from the migration files' ``revision`` and ``down_revision`` lines rather than
    through Alembic's script directory (see above); ``tests/integration`` checks that both
    agree.
    """
    revisions: set[str] = set()
    parents: set[str] = set()
    for path in (HERE / "versions").glob("*.py"):
        for match in _REVISION.finditer(path.read_text(encoding="utf-8")):
            if match.group(3) is not None:
                (parents if match.group(1) else revisions).add(match.group(3))
    heads = revisions - parents
    return heads.pop() if len(heads) == 1 else None
