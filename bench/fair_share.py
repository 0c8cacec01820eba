"""Dispatch with many running backfills of many teams: the fair share's cost. Prints figures;
asserts nothing.

The same number of no-op runs through the in-process daemon (local launcher, 2 workers):

1. one backfill (no team) of ``--runs`` partitions;
2. ``--backfills`` backfills (1,000) of ``--teams`` teams (10), 20 partitions each, all
   running at once: every tick shares the room by priority, team and backfill
   (``backfiller.domain.fair_share``) and claims from many backfills.

Each is launched paused, the daemon started and its workers ready, then all are resumed in
one transaction and the clock runs until ``--runs`` runs succeeded. The issue's target: the
second within 80 % of the first's runs/s.

Run with ``python -m bench.fair_share`` (``--database URL`` for PostgreSQL).
"""

from __future__ import annotations

import argparse
import asyncio
import tempfile
import time
from collections import Counter
from datetime import UTC, datetime
from pathlib import Path

from sqlalchemy import func, select

from backfiller.config import Settings
from backfiller.daemon import Daemon, DaemonSettings
from backfiller.domain import BackfillState, SelectionKind
from backfiller.launchers import LocalLauncher
from backfiller.planning import Selection
from backfiller.resolvers.context import Services
from backfiller.services.launch_types import LaunchPlan, LaunchRequest
from backfiller.services.launching import Launched, create_backfill, validate_launch
from backfiller.storage import Database
from backfiller.storage.migrations import upgrade_database
from backfiller.storage.records import BackfillRecord
from backfiller.storage.repositories import BackfillRepository
from bench.defs import definitions

TARGET = "bench.defs:definitions"
PER_BACKFILL = 20


async def launch_paused(services: Services, sizes: list[tuple[int, str | None]]) -> list[int]:
    """Backfills of ``hourly_history`` (each a range of ``size`` hours, for ``team``), paused."""
    job = definitions.get_job("hourly_history")
    assert job is not None
    space = job.partitions.key_space(datetime.now(UTC))
    ids: list[int] = []
    first = 0
    for size, team in sizes:
        span = (space.key_at(first), space.key_at(first + size - 1))
        first += size
        request = LaunchRequest(
            job="hourly_history", selection=Selection(SelectionKind.RANGE, *span)
        )
        plan = await validate_launch(services, request, creator="bench", team=team)
        assert isinstance(plan, LaunchPlan), plan
        launched = await create_backfill(services, plan.new)
        assert isinstance(launched, Launched), launched
        ids.append(launched.record.id)
    now = datetime.now(UTC)
    async with services.database.write() as session:
        repo = BackfillRepository(session)
        for pk in ids:
            await repo.move(pk, BackfillState.PAUSED, [BackfillState.REQUESTED], now)
    return ids


async def dispatch(
    url: str, sizes: list[tuple[int, str | None]], runs: int
) -> tuple[float, Counter[str]]:
    """Runs per second until ``runs`` succeeded, and the runs per team by then."""
    database = Database(url)
    services = Services(database=database, definitions=definitions, settings=Settings(
        max_partitions_per_backfill=10_000_000))  # fmt: skip
    ids = await launch_paused(services, sizes)
    launcher = LocalLauncher(TARGET, 2).start()
    daemon = Daemon(database, definitions, launcher, DaemonSettings(plan_window=50))
    stop = asyncio.Event()
    task = asyncio.create_task(daemon.run(stop))
    while launcher.ready_workers() < 2:  # noqa: ASYNC110 (the launcher has no event)
        await asyncio.sleep(0.02)
    await asyncio.sleep(0.5)
    started = time.perf_counter()
    async with database.write() as session:
        repo = BackfillRepository(session)
        for pk in ids:
            await repo.move(pk, BackfillState.REQUESTED, [BackfillState.PAUSED], datetime.now(UTC))
    table = BackfillRecord.__table__
    while True:
        await asyncio.sleep(0.05)
        async with database.read() as session:
            done = (await session.execute(select(func.sum(table.c.succeeded)))).scalar_one() or 0
        if done >= runs:
            break
    took = time.perf_counter() - started
    async with database.read() as session:
        rows = (
            await session.execute(
                select(table.c.team, func.sum(table.c.succeeded)).group_by(table.c.team)
            )
        ).all()
    stop.set()
    await task
    await database.dispose()
    return done / took, Counter({str(team): int(n) for team, n in rows})


async def main(args: argparse.Namespace) -> None:
    folder = Path(tempfile.mkdtemp(prefix="bench-fair-"))

    def fresh(name: str) -> str:
        if args.database:
            upgrade_database(args.database)
            return str(args.database)
        url = f"sqlite:///{folder / name}"
        upgrade_database(url)
        return url

    where = "PostgreSQL" if args.database else "SQLite"
    one, _ = await dispatch(fresh("one.db"), [(args.runs * 2, None)], args.runs)
    if args.database:
        print("(PostgreSQL: empty the database between the two runs yourself)")
    many_sizes = [(PER_BACKFILL, f"team-{i % args.teams}") for i in range(args.backfills)]
    many, per_team = await dispatch(fresh("many.db"), many_sizes, args.runs)
    print(f"dispatch of {args.runs} no-op runs, 2 workers, {where}, in-process daemon")
    print(f"  one backfill:                          {one:7.0f} runs/s")
    print(
        f"  {args.backfills} backfills of {args.teams} teams:        {many:7.0f} runs/s "
        f"({many / one:.0%} of one backfill's)"
    )
    spread = sorted(per_team.values())
    print(f"  runs per team by then: least {spread[0]}, most {spread[-1]}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=5_000)
    parser.add_argument("--backfills", type=int, default=1_000)
    parser.add_argument("--teams", type=int, default=10)
    parser.add_argument("--database", help="a PostgreSQL URL (default: new SQLite files)")
    asyncio.run(main(parser.parse_args()))
