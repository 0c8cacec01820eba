"""``backfiller db``: migrate the database (``upgrade``) and prune its history (``prune``)."""

from __future__ import annotations

import asyncio
import re
from collections import Counter
from datetime import timedelta
from typing import Annotated

import typer

from backfiller.cli.app import db_app
from backfiller.cli.server import DatabaseOption, fail
from backfiller.clock import utc_now
from backfiller.config import HistorySettings
from backfiller.services.pruning import Cutoffs, Pruner
from backfiller.storage import Database
from backfiller.storage.history_partitions import Dropped
from backfiller.storage.retention import PRUNED_TABLES, bytes_per_row

_AGE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([dhm]?)\s*$")
_UNIT = {"d": "days", "": "days", "h": "hours", "m": "minutes"}


@db_app.command("upgrade")
def db_upgrade(database: DatabaseOption = None) -> None:
    """Migrate the database to this release's schema."""
    from backfiller.storage.migrations import current_revision, upgrade_database

    try:
        upgrade_database(database or "")
        typer.echo(f"database at revision {current_revision(database or '')}")
    except Exception as exc:
        raise fail(f"cannot upgrade the database: {type(exc).__name__}: {exc}") from None


def parse_age(text: str) -> timedelta:
    """``30d``, ``12h``, ``90m`` or a number of days."""
    match = _AGE.match(text)
    if match is None or float(match.group(1)) <= 0:
        raise typer.BadParameter("an age like 30d, 12h or 90m", param_hint="--older-than")
    return timedelta(**{_UNIT[match.group(2)]: float(match.group(1))})


@db_app.command("prune")
def db_prune(
    older_than: Annotated[
        str,
        typer.Option(
            "--older-than",
            help="Delete finished backfills (with their runs, log lines, slots, events and "
            "notifications) that ended, and trigger evaluations made, before this age: 30d, "
            "12h, 90m.",
        ),
    ],
    dry_run: Annotated[
        bool, typer.Option("--dry-run", help="Count what would go; delete nothing.")
    ] = False,
    audit: Annotated[
        bool,
        typer.Option("--audit", help="Also delete audit entries older than that (kept otherwise)."),
    ] = False,
    archive: Annotated[
        str | None,
        typer.Option(
            "--archive",
            envvar="BACKFILLER_ARCHIVE_URL",
            help="Write the deleted rows there first, as JSON Lines (a folder or fsspec URL).",
        ),
    ] = None,
    database: DatabaseOption = None,
) -> None:
    """Delete history older than an age now (the daemons do it on their own, see
    BACKFILLER_KEEP_*), printing what goes and the space it takes."""
    age = parse_age(older_than)
    from backfiller.storage.engine import normalize_database_url

    try:
        url = normalize_database_url(database)
    except Exception as exc:
        raise fail(f"bad database URL: {exc}") from None
    settings = HistorySettings.from_env(archive_url=archive)
    cutoff = utc_now() - age
    cutoffs = Cutoffs(cutoff, cutoff, cutoff if audit else None)
    try:
        lines = asyncio.run(_prune(url, settings, cutoffs, dry_run))
    except Exception as exc:
        raise fail(f"cannot prune: {type(exc).__name__}: {exc}") from None
    for line in lines:
        typer.echo(line)


async def _prune(url: str, settings: HistorySettings, cutoffs: Cutoffs, dry_run: bool) -> list[str]:
    database = Database(url, log_store=settings.log_store)
    try:
        sizes = await database.query(bytes_per_row)
        pruner = Pruner(database, settings, database.log_store)
        if dry_run:
            rows = Counter(await pruner.count(cutoffs))
        else:
            rows = await pruner.prune(cutoffs)
    finally:
        await database.dispose()
    return report_lines(rows, sizes, dry_run) + dropped_lines(pruner.dropped, dry_run)


def dropped_lines(dropped: list[Dropped], dry_run: bool) -> list[str]:
    """The history ranges whose partitions went whole (PostgreSQL), and the space they had:
    their rows are in the table above, their space is the files' own."""
    verb = "would drop" if dry_run else "dropped"
    return [
        f"{verb} the partitions of backfills {d.range.low} to {d.range.high - 1}: "
        + ", ".join(
            f"{d.range.name(table)} ({d.rows[table]:,} rows, {_size(d.bytes[table])})"
            for table in d.bytes  # its partitions (its backfills' rows are in the table above)
        )
        for d in dropped
    ]


def report_lines(rows: Counter[str], sizes: dict[str, float], dry_run: bool) -> list[str]:
    """The table ``db prune`` prints: rows and the space they take, per table."""
    lines = [f"{'table':<22}{'rows':>14}{'space':>12}"]
    total_rows = total_bytes = 0.0
    for table in PRUNED_TABLES:
        n = rows.get(table, 0)
        space = n * sizes.get(table, 0.0)
        total_rows += n
        total_bytes += space
        lines.append(f"{table:<22}{n:>14,}{_size(space):>12}")
    lines.append(f"{'total':<22}{int(total_rows):>14,}{_size(total_bytes):>12}")
    if dry_run:
        lines.append("dry run: nothing was deleted")
    else:
        lines.append(
            "deleted; the space is free for the database to reuse (on PostgreSQL, after "
            "autovacuum; the files shrink only with VACUUM FULL, or at once where a whole "
            "time partition was dropped)"
        )
    return lines


def _size(n: float) -> str:
    for unit in ("B", "kB", "MB", "GB", "TB"):
        if n < 1024 or unit == "TB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n:.1f} TB"
