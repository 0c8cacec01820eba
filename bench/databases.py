"""A PostgreSQL database of its own for a benchmark or a test, dropped after it."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from contextlib import contextmanager

from sqlalchemy import create_engine, text
from sqlalchemy.engine import make_url


@contextmanager
def scratch_postgres(
    server_url: str, prefix: str = "bf_bench", keep: bool = False
) -> Iterator[str]:
    """A new, empty database on ``server_url``'s server (named ``<prefix>_<random>``), its URL
    (psycopg's driver); dropped at the end, connections and all, unless ``keep``."""
    base = make_url(server_url).set(drivername="postgresql+psycopg")
    name = f"{prefix}_{uuid.uuid4().hex[:10]}"
    admin = create_engine(base, isolation_level="AUTOCOMMIT")
    with admin.connect() as conn:
        conn.execute(text(f'CREATE DATABASE "{name}"'))
    try:
        yield base.set(database=name).render_as_string(hide_password=False)
    finally:
        if not keep:
            with admin.connect() as conn:
                conn.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
        admin.dispose()
