"""Alembic environment: runs migrations on a synchronous connection."""

from __future__ import annotations

from alembic import context
from sqlalchemy import create_engine, pool

from backfiller.storage.engine import SQLITE_JOURNAL
from backfiller.storage.history_partitions import is_partition
from backfiller.storage.metadata import metadata

config = context.config
target_metadata = metadata


def run_migrations() -> None:
    url = config.get_main_option("sqlalchemy.url")
    assert url is not None
    engine = create_engine(url, poolclass=pool.NullPool)
    with engine.connect() as connection:
        if connection.dialect.name == "sqlite":
            # The journal every connection of the service sets, set before the migrations
            # rather than after: SQLite's default journal made each of their statements (they
            # commit one by one) create, sync and delete a journal file, half of what building
            # a new database took.
            for pragma in SQLITE_JOURNAL:
                connection.exec_driver_sql(pragma)
            connection.commit()  # end the transaction those began, before Alembic's own
        context.configure(
            connection=connection,
            target_metadata=target_metadata,
            render_as_batch=connection.dialect.name == "sqlite",
            # The history's partitions are the database's, not the models' (PostgreSQL).
            include_name=lambda name, kind, _: kind != "table" or not is_partition(name),
        )
        with context.begin_transaction():
            context.run_migrations()
    engine.dispose()


run_migrations()
