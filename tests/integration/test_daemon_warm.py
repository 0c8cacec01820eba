"""A daemon pays in its first idle pass what its first claim would otherwise pay, so that the
first run of its first backfill starts as soon as the next ones do."""

from __future__ import annotations

from sqlalchemy import select

from backfiller.daemon.ticks import DaemonState, launch_runs
from backfiller.definitions.loading import Definitions
from backfiller.launchers import InlineLauncher
from backfiller.storage import Database
from backfiller.storage.auth_records import SigningKeyRecord
from backfiller.storage.run_credentials import PURPOSE, forget_signing_keys, signing_key
from tests.support import FrozenClock


async def stored_key(database: Database) -> str | None:
    async with database.read() as session:
        found = await session.execute(
            select(SigningKeyRecord.secret).where(SigningKeyRecord.purpose == PURPOSE)
        )
        return found.scalar_one_or_none()


async def test_the_first_idle_pass_makes_the_signing_key_once(
    database: Database, definitions: Definitions, clock: FrozenClock
) -> None:
    forget_signing_keys()  # a database emptied since another test cached its key
    assert await stored_key(database) is None
    state = DaemonState()
    launcher = InlineLauncher(definitions)
    report = await launch_runs(database, definitions, clock, launcher, state)
    assert report.claimed == 0 and state.warmed
    made = await stored_key(database)
    assert made is not None and bytes.fromhex(made) == await signing_key(database)
    await launch_runs(database, definitions, clock, launcher, DaemonState())
    assert await stored_key(database) == made, "a second daemon reads it, makes none"
