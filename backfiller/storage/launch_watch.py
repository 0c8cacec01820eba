"""Telling a daemon at once that a backfill was launched, so that it plans it without waiting.

A daemon plans every ``plan_seconds`` anyway; this only shortens the wait for the first run of
a new backfill. A launch is seen by the means each database has:

- **PostgreSQL**: an insert into ``backfills`` notifies the channel ``backfiller_launched``
  (a statement trigger, migration 0012, whatever process or release inserts), and the daemon
  ``LISTEN``s on a connection of its own. Nothing is polled.
- **SQLite**: the daemon reads the newest backfill's id every ``poll_seconds`` on a read-only
  connection of its own (an index lookup of a few microseconds, on the event loop's thread).

Missing a launch costs nothing but the wait: the watch never raises, it logs and starts over.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import sqlite3
from collections.abc import Callable
from pathlib import Path

from sqlalchemy.engine import make_url

from backfiller.storage.engine import Database

logger = logging.getLogger("backfiller.daemon")

CHANNEL = "backfiller_launched"
POLL_SECONDS = 0.05
RETRY_SECONDS = 1.0

_NEWEST = "SELECT max(id) FROM backfills"
_UNREAD = object()


async def watch_launches(
    database: Database, on_launch: Callable[[], None], poll_seconds: float = POLL_SECONDS
) -> None:
    """Call ``on_launch`` soon after each launch, until cancelled."""
    if database.is_sqlite:
        await _poll_sqlite(database, on_launch, poll_seconds)
    else:
        await _listen_postgres(database, on_launch)


async def _poll_sqlite(
    database: Database, on_launch: Callable[[], None], poll_seconds: float
) -> None:
    path = make_url(database.url).database
    if not path or path == ":memory:":
        return  # another connection would see another database
    newest: object = _UNREAD  # an empty table's None is a value: its first launch counts
    while True:
        try:
            with contextlib.closing(_read_only(path)) as conn:
                while True:
                    current = conn.execute(_NEWEST).fetchone()[0]
                    if newest is not _UNREAD and current != newest:
                        on_launch()
                    newest = current
                    await asyncio.sleep(poll_seconds)
        except sqlite3.Error as error:  # not created or migrated yet, or busy: try again
            logger.debug("launch watch: %s", error)
        except Exception:
            logger.warning("the launch watch failed; trying again", exc_info=True)
        await asyncio.sleep(RETRY_SECONDS)


def _read_only(path: str) -> sqlite3.Connection:
    # Autocommit: each read sees the latest commit, and no read transaction stays open.
    uri = Path(path).resolve().as_uri() + "?mode=ro"
    conn = sqlite3.connect(uri, uri=True, isolation_level=None)
    conn.execute("PRAGMA busy_timeout=0")
    return conn


async def _listen_postgres(database: Database, on_launch: Callable[[], None]) -> None:
    import psycopg

    url = make_url(database.url).set(drivername="postgresql")
    conninfo = url.render_as_string(hide_password=False)
    while True:
        try:
            async with await psycopg.AsyncConnection.connect(conninfo, autocommit=True) as conn:
                await conn.execute(f"LISTEN {CHANNEL}")
                async for _ in conn.notifies():
                    on_launch()
        except psycopg.OperationalError as error:  # the database is away: plans go on
            logger.debug("launch watch: %s", error)
        except Exception:
            logger.warning("the launch watch failed; trying again", exc_info=True)
        await asyncio.sleep(RETRY_SECONDS)
